"""RUNNER_TYPE=acp: any agent that speaks the Agent Client Protocol (ACP v1), on the shared ACP client
(``bridges.acp_client``), its preset named by ``ACP_AGENT`` (``presets``: opencode; ``custom`` with
``ACP_AGENT_COMMAND``).

One live agent process for the pod, an ACP session per thread, ``session/prompt`` per turn; its permission requests
become interrupts (the platform's question card), an interrupt is ``session/cancel`` (the session stays). The
agent's model requests go through the runner's model proxy (the key stays in the runner); its HOME and XDG folders
lie in the runner's state dir, so the state sync carries its sessions (``session/load`` after a restart).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ag_ui.core import BaseEvent, ToolCallStartEvent

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_gemini_cli import GeminiAcpAdapter
from ambient_runner.bridges.acp.adapter import AgentAcpAdapter
from ambient_runner.bridges.acp.model_apis import (
    MODEL_APIS,
    SCRIPTED_KEY,
    AcpCredentials,
    ModelApiKind,
    ModelEndpoint,
    configured_key,
)
from ambient_runner.bridges.acp.preset import AcpPreset, AgentSetup
from ambient_runner.bridges.acp.presets import OPENCODE, PRESETS, framework_of, preset_of
from ambient_runner.bridges.acp_client.connection import AgentName
from ambient_runner.bridges.acp_client.live import CliCommand, LiveAgent
from ambient_runner.bridges.acp_client.mcp import acp_servers
from ambient_runner.bridges.acp_client.moves import SessionFolders
from ambient_runner.bridges.acp_client.turns import AcpTurns
from ambient_runner.bridges.base import CliBridge
from ambient_runner.bridges.contract import BridgeError, Capabilities, Readiness, StateFiles, Turn
from ambient_runner.bridges.host import BridgeHost
from ambient_runner.bridges.mcp_probe import McpProbe
from ambient_runner.bridges.options import APPROVAL_NOTE, RunnerOptions
from ambient_runner.bridges.turn_loop import TurnHooks
from ambient_runner.model_proxy import Upstream
from ambient_runner.process.environment import agent_environment, agent_values
from ambient_runner.process.supervisor import ProcessLimits
from ambient_runner.settings import RunnerSettings

log = logging.getLogger(__name__)
FOLDERS = "ambient-runner-session-folders.json"  # each session's folder, beside the session map


@dataclass(frozen=True)
class AcpAuth:
    """The model key the runner holds for the agent's model API (the scripted server's offline)."""

    kind: str  # "api_key" | "scripted" | "missing"
    api: ModelApiKind
    key: str = ""
    base_url: str = ""
    variable: str = ""  # the variable the key was found in (the agent gets the placeholder in it)

    @property
    def ok(self) -> bool:
        return self.kind != "missing"

    @property
    def problem(self) -> str:
        return "" if self.ok else (f"No model key for the agent's {self.api.name} API: set "
                                   f"{' or '.join(self.api.keys_alone)}.")

    @property
    def missing(self) -> list[str]:
        return [] if self.ok else list(self.api.keys_alone)

    @property
    def secrets(self) -> list[str]:
        return [self.key] if self.key and self.kind != "scripted" else []


class AcpBridge(CliBridge[AcpAuth]):
    runner_type: ClassVar[str] = "acp"
    attachment_types = frozenset({"image/png", "image/jpeg", "image/webp"})

    def __init__(self, settings: RunnerSettings, host: BridgeHost | None = None) -> None:
        super().__init__(settings, host)
        self.preset: AcpPreset | None = preset_of(settings.acp_agent)
        self.framework = framework_of(settings.acp_agent)  # a registry entry per preset
        preset = self.preset or OPENCODE
        self.api = MODEL_APIS[settings.acp_agent_model_api or preset.model_api.name]
        self.credentials = AcpCredentials()  # every model API's key and base-URL variables, read once
        self.scripted_model = self.api.scripted  # the offline stand-in of the agent's model API
        # the preset's model on its own API, else the API's usual one
        self.first_model = preset.default_model if self.api is preset.model_api else self.api.default_model
        self.options = RunnerOptions(runner=f"the ACP runner ({preset.display})", default_model=self.first_model,
                                     approvals=True, mode_note="plan is not used by this runner's agents",
                                     approval_note=preset.approval_note or APPROVAL_NOTE)
        self.home = settings.state_dir / "home"
        self.live = LiveAgent(self._command, AgentName(name=f"The {preset.display} agent",
                                                       label=f"{preset.name} (ACP)"),
                              mcp_servers=lambda: acp_servers(self.mcp), session_meta=preset.session_meta,
                              title=preset.title, resume_first=preset.resume_first)
        self.mcp_probe = McpProbe()
        self._turns = AcpTurns(self.live, self.sessions, self.hitl, self.place, self._model, self._mcp_tool_name,
                               who=preset.display, adapter=self._adapter, model_id=preset.model_id,
                               keeps_own_model=preset.own_model, mode=preset.mode,
                               ends_commands=preset.ends_commands,
                               max_open=settings.runner_max_live_clis if preset.session_processes else None,
                               moves=preset.moves, folders=SessionFolders(self.sessions.path.with_name(FOLDERS)))

    # ----- auth and the model proxy ----------------------------------------------------------------------
    def resolve_auth(self) -> AcpAuth:
        if self.scripted_url:
            return AcpAuth("scripted", self.api, SCRIPTED_KEY, f"{self.scripted_url}{self.api.path_suffix}",
                           self.api.key_variables[0])
        variables = self.credentials.variables()
        found = configured_key(self.api, variables)
        if found is None:
            return AcpAuth("missing", self.api)
        base_url = (variables.get(self.api.base_url_variable) or "").strip() or self.api.api.default_base_url
        return AcpAuth("api_key", self.api, found[1], base_url.rstrip("/"), found[0])

    def model_upstream(self) -> Upstream | None:
        auth = self.auth
        return self.api.api.upstream(auth.base_url, {auth.variable: auth.key}) if auth.ok else None

    def _endpoint(self) -> ModelEndpoint:
        """What the agent is given: the model proxy's URL and placeholder (the key stays in the runner)."""
        variable = self.auth.variable or self.api.key_variables[0]
        if self.model_proxy is not None:
            return ModelEndpoint(f"{self.model_proxy.base_url}{self.api.path_suffix}", self.model_proxy.placeholder,
                                 variable)
        return ModelEndpoint(self.auth.base_url, self.auth.key, variable)

    # ----- the agent's process ---------------------------------------------------------------------------
    def _argv(self) -> list[str] | None:
        if self.preset is None or not self.preset.speaks(self.api):
            return None
        return self.preset.argv(self.settings.acp_agent_command)

    def _missing_agent(self) -> str:
        if self.preset is None:
            named = ", ".join(name for name in PRESETS if name != "custom")
            return (f"ACP_AGENT={self.settings.acp_agent!r} is not a preset: use {named}, or custom with "
                    "ACP_AGENT_COMMAND.")
        if not self.preset.speaks(self.api):
            return (f"The {self.preset.display} agent does not speak the {self.api.name} API (ACP_AGENT_MODEL_API): "
                    f"use {' or '.join(self.preset.model_apis)}.")
        if self.preset.name == "custom":
            return "ACP_AGENT=custom needs ACP_AGENT_COMMAND (the agent's ACP command line)."
        return (f"The {self.preset.display} agent was not found ('{self.preset.executable}'): install "
                f"{self.preset.package} (npm install) or set ACP_AGENT_COMMAND.")

    def _command(self) -> CliCommand:
        argv = self._argv()
        if argv is None or self.preset is None:
            raise BridgeError(self._missing_agent(), code=ErrorCode.CLI_NOT_FOUND)
        self.settings.workspace_path.mkdir(parents=True, exist_ok=True)
        return CliCommand(argv, self.settings.workspace_path, self._environment(),
                          ProcessLimits(max_line_bytes=self.settings.runner_max_line_bytes))

    def _environment(self) -> dict[str, str]:
        """Allowlisted, the agent's HOME and XDG folders in the state dir, and its preset's variables."""
        assert self.preset is not None
        folders = self._folders()
        setup = AgentSetup(self._endpoint(), self.home, self._model(None), tuple(self.options.models(self.settings)),
                           tuple(self._argv() or ()), max_retries=self.settings.claude_code_max_retries)
        return agent_environment({"HOME": str(self.home), **{k: str(v) for k, v in folders.items()},
                                  **self.preset.environment(setup, self.api)})

    def _folders(self) -> dict[str, Path]:
        folders = {"XDG_CONFIG_HOME": self.home / ".config", "XDG_DATA_HOME": self.home / ".local" / "share",
                   "XDG_STATE_HOME": self.home / ".local" / "state", "XDG_CACHE_HOME": self.home / ".cache",
                   "TMPDIR": self.home / "tmp"}
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return folders

    async def prepare(self) -> None:
        if self.readiness().ready:
            await self.live.start_early()

    async def stop_cli(self) -> None:
        try:
            await self.mcp_probe.close()
        finally:
            await self.live.close()

    # ----- contract --------------------------------------------------------------------------------------
    def readiness(self) -> Readiness:
        missing: list[str] = []
        details: list[str] = []
        if self._argv() is None:
            missing.append("ACP_AGENT_COMMAND" if self.preset is None or self.preset.speaks(self.api)
                           else "ACP_AGENT_MODEL_API")
            details.append(self._missing_agent())
        return self.readiness_of(missing, details, self.live.start_problem)

    def features(self) -> dict[str, bool]:
        return {"approvals": True, "mcp": True, "reasoning": True}

    async def mcp_status(self) -> list[dict[str, Any]]:
        """The runner's MCP servers, given to the agent's every session; ACP has no report of which it connected,
        so the runner connects to each as the agent does (``bridges.mcp_probe``)."""
        return await self.mcp_probe.status(self.mcp, lambda: agent_values(self.mcp.references()),
                                           self._probe_environment, self.settings.workspace_path)

    def _probe_environment(self) -> dict[str, str]:
        """What the agent's stdio MCP servers start with: the agent's environment."""
        return self._environment() if self.preset is not None else agent_environment({})

    def capabilities(self) -> Capabilities:
        """The runner's, with what the agent reports of itself: its name and version (``initialize``), the modes
        and models of its last session (before the first session: none)."""
        info = self.live.agent_info
        agent = {"preset": self.settings.acp_agent, "name": info.name if info else None,
                 "version": info.version if info else None, **self.live.offered}
        return super().capabilities().model_copy(update={"agent": agent})

    def _mcp_tool_name(self, event: BaseEvent) -> BaseEvent:
        """An MCP tool call named as the runner's configuration names it: <server>_<tool> (opencode's name) and
        mcp.<server>.<tool> (codex-acp's) -> mcp__<server>__<tool>."""
        if isinstance(event, ToolCallStartEvent):
            for server in sorted(self.mcp.servers, key=len, reverse=True):
                for prefix in (f"{server}_", f"mcp.{server}."):
                    if event.tool_call_name.startswith(prefix):
                        tool = event.tool_call_name[len(prefix):]
                        return event.model_copy(update={"tool_call_name": f"mcp__{server}__{tool}"})
        return event

    def state_files(self) -> StateFiles:
        """The agent's caches, temporary files and logs are not state (its model key stays in the proxy)."""
        return StateFiles(excludes=("home/.cache", "home/tmp", *(self.preset.state_excludes if self.preset else ()),
                                    "*.sock", f".{FOLDERS}.*.tmp"))  # the sessions' folders' temporary file

    def _model(self, requested: str | None) -> str:
        return requested or self.default_model or self.first_model

    def _adapter(self, turn: Turn, model: str) -> GeminiAcpAdapter:
        return AgentAcpAdapter(turn.thread_id, turn.run_id, model=model, provider=self.api.provider)

    def check_turn(self, turn: Turn) -> None:
        if not turn.prompt.strip() and not self.hitl.turns.parked(turn.thread_id):  # a resume needs no message
            raise BridgeError("The run has no user message to send to the agent.", code=ErrorCode.EMPTY_PROMPT)
        if self._argv() is None:
            raise BridgeError(self._missing_agent(), code=ErrorCode.CLI_NOT_FOUND)
        self.require_workspace()

    def turn_hooks(self) -> TurnHooks[Any, Any]:
        return self._turns

    async def interrupt(self, thread_id: str) -> None:
        await self._turns.interrupt(thread_id)
