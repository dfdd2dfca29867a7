"""RUNNER_TYPE=gemini-cli: the Gemini CLI (``@google/gemini-cli``) as an AG-UI runner.

Two transports (``GEMINI_TRANSPORT``): ``acp`` (the default), one live ``gemini --acp`` for the pod with an ACP
session per thread (``acp/``: reasoning, approvals, a cancel that keeps the session, later turns in milliseconds),
and ``stream-json``, one ``gemini -p --output-format stream-json`` process a turn (``worker``), which ACP also uses
for a turn whose session cannot be loaded into the live CLI yet.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, ClassVar

from ag_ui.core import BaseEvent, ToolCallStartEvent

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges.acp_client.live import CliCommand, LiveAgent
from ambient_runner.bridges.acp_client.turns import AcpTurns
from ambient_runner.bridges.base import CliBridge
from ambient_runner.bridges.contract import BridgeError, Readiness, StateFiles, Turn
from ambient_runner.bridges.gemini_cli.acp import GEMINI, WHO, session_mode
from ambient_runner.bridges.gemini_cli.acp.session_files import GeminiSessionKeeper, SessionFiles
from ambient_runner.bridges.gemini_cli.auth import (
    CREDENTIAL_FILE_NAMES,
    OAUTH_CREDS_NAME,
    GeminiAuth,
    GeminiCredentials,
    install_oauth_credentials,
    model_upstream,
    resolve_auth,
    scripted_auth,
    through_proxy,
)
from ambient_runner.bridges.gemini_cli.config import (
    CLI_PATH_VAR,
    DEFAULT_MODEL,
    DEFAULT_MODELS,
    SYSTEM_SETTINGS_PATH,
    TRANSPORT_VAR,
    TRANSPORTS,
    GeminiHome,
    acp_argv,
    cli_env,
    configured_servers,
    ensure_system_settings,
    find_cli,
    max_attempts,
    prompt_with_files,
    transport,
    turn_argv,
    write_settings,
)
from ambient_runner.bridges.gemini_cli.mcp_status import GeminiMcpStatus
from ambient_runner.bridges.gemini_cli.session import StreamJsonTurns, TurnRunner, TurnSpec
from ambient_runner.bridges.host import BridgeHost
from ambient_runner.bridges.options import RunnerOptions
from ambient_runner.bridges.turn_loop import TurnHooks
from ambient_runner.mcp.naming import from_gemini
from ambient_runner.mcp.render import gemini_servers
from ambient_runner.model_proxy import Upstream
from ambient_runner.process.environment import agent_environment
from ambient_runner.process.supervisor import ProcessLimits
from ambient_runner.scripted_models.gemini import ScriptedGeminiServer
from ambient_runner.settings import RunnerSettings

log = logging.getLogger(__name__)


GEMINI_MODEL_SEPARATORS = "._-/@"  # no ':': it would end the id in the URL path (models/<id>:streamGenerateContent)


def runner_options(approvals: bool) -> RunnerOptions:
    return RunnerOptions(runner="the Gemini CLI runner", default_model=DEFAULT_MODEL, default_models=DEFAULT_MODELS,
                         efforts=None, approvals=approvals, model_separators=GEMINI_MODEL_SEPARATORS,
                         mode_note="plan = the CLI's plan approval mode (read-only tools)")


OPTIONS = runner_options(approvals=True)  # ACP (the default transport) asks; stream-json cannot
STREAM_JSON_OPTIONS = runner_options(approvals=False)


class GeminiCliBridge(CliBridge[GeminiAuth]):
    runner_type: ClassVar[str] = "gemini-cli"
    framework = "gemini-cli"
    attachment_types = frozenset({"image/png", "image/jpeg", "image/webp", "application/pdf"})
    scripted_model = ScriptedGeminiServer

    def __init__(self, settings: RunnerSettings, host: BridgeHost | None = None) -> None:
        super().__init__(settings, host)
        self.credentials = GeminiCredentials()  # the Gemini variables, read once
        self.home = GeminiHome.for_state_dir(settings.state_dir)
        self.max_attempts = max_attempts(settings.gemini_cli_max_attempts)
        self._runner: TurnRunner | None = None
        self._prepared = False
        self._mcp_status = GeminiMcpStatus()
        self.system_settings: Path | None = None
        self.transport = transport(settings.gemini_transport)
        self.options = OPTIONS if self.transport == "acp" else STREAM_JSON_OPTIONS
        self.live = LiveAgent(self._acp_command, GEMINI)
        self._acp: AcpTurns | None = None
        self._stream_json: StreamJsonTurns | None = None

    # ----- lifecycle -------------------------------------------------------------------------------------
    def resolve_auth(self) -> GeminiAuth:
        return scripted_auth(self.scripted_url) if self.scripted_url else resolve_auth(self.credentials.variables())

    def model_upstream(self) -> Upstream | None:
        return model_upstream(self.auth)

    async def prepare(self) -> None:
        self.system_settings = ensure_system_settings()
        if self.system_settings is None:
            log.warning("no Gemini system settings file at %s (needs root to write): a workspace .gemini/settings.json "
                        "can change the CLI's settings", SYSTEM_SETTINGS_PATH)
        self._prepare()
        if self.transport == "acp" and self.readiness().ready:
            await self.live.start_early()

    async def stop_cli(self) -> None:
        try:
            await self._mcp_status.close()
        finally:
            await self.live.close()

    def _prepare(self) -> None:
        """Idempotent: CLI home, settings.json, login credentials, session map."""
        auth = self.auth
        if not self._prepared:
            self.home.prepare()
            if auth.ok:
                write_settings(self.home, auth, self.max_attempts, gemini_servers(self.mcp))
                install_oauth_credentials(auth, self.home.gemini_dir)
            self._prepared = auth.ok
        if self._runner is None:
            self._runner = TurnRunner(self.sessions)
            self._stream_json = StreamJsonTurns(self._runner, self._turn_spec, self.resume_failed_message,
                                                self._mcp_tool_name)
            files = SessionFiles(self.home.gemini_dir, self.home.tmp_dir / "session-backups")
            self._acp = AcpTurns(self.live, self.sessions, self.hitl, self.place, self._model, self._mcp_tool_name,
                                 files=GeminiSessionKeeper(files), fallback=self._one_process_turn,
                                 mode=session_mode, who=WHO, drops_cancelled=True)

    def _acp_command(self) -> CliCommand:
        cli = self._cli()
        attachments = self.settings.runner_attachments_dir
        attachments.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.settings.workspace_path.mkdir(parents=True, exist_ok=True)
        return CliCommand(acp_argv(cli, self._model(None), attachments, self.settings.workspace_path,
                                   self._own_mcp_servers()),
                          self.settings.workspace_path,
                          self._cli_environment(), ProcessLimits(max_line_bytes=self.settings.runner_max_line_bytes))

    @property
    def _cli_name(self) -> str:
        """What a missing CLI is called in its error: the configured path, else ``gemini``."""
        return self.settings.gemini_cli_path.strip() or "gemini"

    def _cli(self) -> str:
        """The gemini executable (``GEMINI_CLI_PATH``, else the repo's, else on PATH); ``CLI_NOT_FOUND`` without."""
        cli = find_cli(self.settings.gemini_cli_path)
        if cli is None:
            raise BridgeError(f"The Gemini CLI was not found ('{self._cli_name}'). "
                              f"Install @google/gemini-cli (npm install) or set {CLI_PATH_VAR} to the gemini "
                              "executable.", code=ErrorCode.CLI_NOT_FOUND)
        return cli

    # ----- contract --------------------------------------------------------------------------------------
    def readiness(self) -> Readiness:
        missing: list[str] = []
        details: list[str] = []
        if find_cli(self.settings.gemini_cli_path) is None:
            missing.append(CLI_PATH_VAR)
            details.append(f"The Gemini CLI was not found ('{self._cli_name}'): "
                           f"install @google/gemini-cli or set {CLI_PATH_VAR}.")
        if self.transport not in TRANSPORTS:
            missing.append(TRANSPORT_VAR)
            details.append(f"{TRANSPORT_VAR}={self.transport!r} is not a transport: use {' or '.join(TRANSPORTS)}.")
        return self.readiness_of(missing, details, self.live.start_problem)

    def features(self) -> dict[str, bool]:
        acp = self.transport == "acp"
        return {"reasoning": acp, "mcp": True, "approvals": acp}

    async def mcp_status(self) -> list[dict[str, Any]]:
        self._prepare()
        return await self._mcp_status.status(self.mcp, find_cli(self.settings.gemini_cli_path),
                                             self.settings.workspace_path, self._cli_environment())

    def _own_mcp_servers(self) -> set[str]:
        """The MCP servers the CLI may start: the runner's, and those of its own settings.json in the state dir;
        never one that only a workspace's or a workflow's settings declare (the trust rule)."""
        return set(gemini_servers(self.mcp)) | configured_servers(self.home)

    def _cli_environment(self) -> dict[str, str]:
        """The CLI's environment: allowlisted, plus the variables the MCP servers' ``${VAR}`` refer to."""
        return agent_environment(cli_env(self.home, through_proxy(self.auth, self.model_proxy), self.system_settings),
                               passthrough=self.mcp.references())

    def state_files(self) -> StateFiles:
        """The state dir keeps settings.json, projects.json and tmp/<project>/chats (the sessions); leave out the
        login files, per-project logs, and settings files caught mid-write."""
        return StateFiles(credentials=CREDENTIAL_FILE_NAMES,
                          logins=(OAUTH_CREDS_NAME,) if self.auth.oauth_file is not None else (),
                          excludes=("tmp/*/logs", ".settings.json.*.tmp", "*.sock"))

    def _model(self, requested: str | None) -> str:
        return requested or self.default_model or DEFAULT_MODEL

    def resume_failed_message(self, session_id: str) -> str:
        return (f"The conversation could not be resumed: the Gemini CLI did not find its saved session {session_id} "
                f"under {self.home.gemini_dir / 'tmp'} for the workspace {self.settings.workspace_path}. This "
                "happens when the runner's state was not restored or the workspace path changed. The thread still "
                "points at that session (nothing was dropped): restore the state dir, or start a new thread.")

    def check_turn(self, turn: Turn) -> None:
        if not turn.prompt.strip() and not self.hitl.turns.parked(turn.thread_id):  # a resume needs no message
            raise BridgeError("The run has no user message to send to the Gemini CLI.", code=ErrorCode.EMPTY_PROMPT)
        self._prepare()
        self._cli()
        self.require_workspace()

    def turn_hooks(self) -> TurnHooks[Any, Any]:
        """The live ``gemini --acp`` (``acp``), or a process a turn (``stream-json``)."""
        hooks = self._acp if self.transport == "acp" else self._stream_json
        assert hooks is not None, "check_turn prepares the hooks"
        return hooks

    def _mcp_tool_name(self, event: BaseEvent) -> BaseEvent:
        """An MCP tool call named as the runner's configuration names it: mcp_<server>_<tool> ->
        mcp__<server>__<tool>."""
        servers = list(self.mcp.servers)
        if servers and isinstance(event, ToolCallStartEvent):
            return event.model_copy(update={"tool_call_name": from_gemini(event.tool_call_name, servers)})
        return event

    def _one_process_turn(self, turn: Turn) -> AsyncGenerator[BaseEvent, None]:
        """A turn as its own ``gemini -p --output-format stream-json`` process (the ACP transport's fallback)."""
        assert self._stream_json is not None
        return self._stream_json.events(turn, self.hitl.turns)

    def _turn_spec(self, turn: Turn) -> TurnSpec:
        """How a turn's ``gemini -p --output-format stream-json`` process starts (``--resume`` for a later one)."""
        cli = self._cli()
        place = self.place(turn)
        resume = self.sessions.get(turn.thread_id)
        files = [a.path for a in turn.attachments]
        return TurnSpec(
            argv=turn_argv(cli, self._model(turn.options.model), resume, plan=turn.options.mode == "plan",
                           attachments_dir=files[0].parent if files else None,
                           ask=self.hitl.turns.policy(turn.thread_id) == "ask", also=place.also,
                           mcp_names=self._own_mcp_servers()),
            cwd=place.cwd,
            env=self._cli_environment(),
            resume_session=resume,
            limits=ProcessLimits(max_line_bytes=self.settings.runner_max_line_bytes),
            prompt=prompt_with_files(turn.prompt, files),
        )

    async def interrupt(self, thread_id: str) -> None:
        if self._acp is not None:
            await self._acp.interrupt(thread_id)
        if self._runner is not None:
            await self._runner.interrupt(thread_id)
