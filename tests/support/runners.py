"""Each real runner (its real CLI) against a scripted model server the test starts and controls itself.

The bridge is built with ``runner_scripted_model=False`` and pointed at the test's server through the same
environment variables a deployment uses (an API key plus a base URL), so the test can switch the server's
``mode`` (error401/429/500, hang, drop, garbage), ``slow_delay`` and ``shell_command`` at any time, and the key
is a real configured credential (redacted from events like any other).

Also: the CLI's processes as seen in /proc (the process groups the runner started), for kill and leak checks.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness import HARNESS_GRACES, RunnerHarness
from proctable import group_members

from ambient_runner.bridges.acp.bridge import AcpBridge
from ambient_runner.bridges.acp.model_apis import MODEL_APIS, ModelApiKind
from ambient_runner.bridges.acp.presets import preset_of
from ambient_runner.bridges.claude.bridge import ClaudeBridge
from ambient_runner.bridges.codex_sdk.bridge import CodexBridge
from ambient_runner.bridges.contract import Bridge
from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.process import proc_stat
from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer
from ambient_runner.scripted_models.base import ScriptedModelServer
from ambient_runner.scripted_models.gemini import ScriptedGeminiServer
from ambient_runner.scripted_models.openai_chat import OpenAIChatServer
from ambient_runner.scripted_models.openai_responses import OpenAIResponsesServer
from ambient_runner.settings import ACP_IMAGE_AGENTS, RunnerSettings

RUNNERS = ("gemini-cli", "codex-sdk", "claude")
# RUNNER_TYPE=acp with each preset that has an image, named as its registry entry (acp-<ACP_AGENT>)
ACP_RUNNERS = tuple(f"acp-{agent}" for agent in ACP_IMAGE_AGENTS)
REGISTRY = Path(__file__).resolve().parents[2] / "deploy" / "agent-registry.json"
BRIDGES: dict[str, type[Bridge]] = {"gemini-cli": GeminiCliBridge, "codex-sdk": CodexBridge, "claude": ClaudeBridge,
                                    "acp": AcpBridge}
# RUNNER_TYPE=acp: the server of ACP_AGENT=opencode's model API (openai-chat); another preset's: acp_model_api
SERVERS: dict[str, type[ScriptedModelServer]] = {"gemini-cli": ScriptedGeminiServer,
                                                 "codex-sdk": OpenAIResponsesServer,
                                                 "claude": AnthropicScriptedServer,
                                                 "acp": OpenAIChatServer}
API_KEYS = {"gemini-cli": "AIzaFaultMatrixKey-7f3c9e21", "codex-sdk": "sk-fault-matrix-key-5b8d2a17",
            "claude": "sk-ant-fault-matrix-key-3e6f9c04", "acp": "sk-acp-chat-key-9d2e6b41"}
# Other credential variables that would change which auth a bridge picks: removed for these tests.
OTHER_CREDENTIALS = ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GEMINI_OAUTH_CREDS_FILE", "CODEX_API_KEY",
                     "CODEX_AUTH_JSON_FILE", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_VERTEX",
                     "CLAUDE_CODE_OAUTH_TOKEN", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                     "GOOGLE_GEMINI_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
PLAIN_PROMPT = "NOTOOL are you still there?"


def acp_model_api(settings: dict[str, Any]) -> ModelApiKind:
    """RUNNER_TYPE=acp: the model API the run's agent speaks (``acp_agent_model_api``, else its preset's)."""
    preset = preset_of(str(settings.get("acp_agent") or "opencode"))
    return MODEL_APIS[settings.get("acp_agent_model_api") or (preset.model_api.name if preset else "openai-chat")]


def provider_environment(runner_type: str, server: ScriptedModelServer,
                         api: ModelApiKind | None = None) -> dict[str, str]:
    """What a deployment sets to point the runner at a (compatible) model endpoint; one attempt per request
    (``api``: the ACP agent's model API, default opencode's)."""
    key = API_KEYS[runner_type]
    if api is not None and api.name != "openai-chat":
        return {**api.deployment(server.base_url, key), "CLAUDE_CODE_MAX_RETRIES": "0", "GEMINI_CLI_MAX_ATTEMPTS": "1"}
    if runner_type == "gemini-cli":
        return {"GEMINI_API_KEY": key, "GOOGLE_GEMINI_BASE_URL": server.base_url, "GEMINI_CLI_MAX_ATTEMPTS": "1"}
    if runner_type in ("codex-sdk", "acp"):
        return {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": f"{server.base_url}/v1"}
    return {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": server.base_url, "CLAUDE_CODE_MAX_RETRIES": "0"}


@dataclass
class ScriptedRunner:
    """The real service (``harness``) with one real runner whose model is ``server``."""

    runner_type: str
    harness: RunnerHarness
    server: ScriptedModelServer
    bridge: Bridge

    @property
    def settings(self) -> RunnerSettings:
        return self.harness.settings

    @property
    def api_key(self) -> str:
        return API_KEYS[self.runner_type]

    def logged(self, thread_id: str) -> list[dict[str, Any]]:
        return self.harness.logged(thread_id)

    def seen(self, thread_id: str, kind: str) -> bool:
        return self.harness.seen(thread_id, kind)

    async def slow_answer(self, thread_id: str, prompt: str = "SLOW stream please",
                          delay: float = 0.5) -> asyncio.Task[list[dict[str, Any]]]:
        """A run whose scripted answer streams ``delay`` s a chunk, once its first text is in the thread's log (the
        task ends with the run's stream; the test sets ``server.slow_delay`` back)."""
        self.server.slow_delay = delay
        before = len(self.logged(thread_id))
        run = asyncio.create_task(self.harness.run(thread_id, prompt))
        await wait_for(lambda: any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in self.logged(thread_id)[before:]),
                       timeout=60, what="the slow answer's text")
        return run

    async def interrupted_answer(self, thread_id: str) -> list[dict[str, Any]]:
        """A slowly streaming run (``slow_answer``) interrupted by ``POST /interrupt``: its whole stream."""
        run = await self.slow_answer(thread_id)
        assert (await self.harness.interrupt(thread_id)).status_code == 200
        try:
            return await asyncio.wait_for(run, timeout=60)
        finally:
            self.server.slow_delay = 0.0

    def model_requests(self) -> int:
        return len(self.server.requests)

    def persistent_leaders(self) -> set[int]:
        """CLI processes the bridge keeps between runs (Codex's app-server, Claude's per-thread CLI, Gemini's live
        ACP process)."""
        bridge = self.bridge
        if isinstance(bridge, CodexBridge):
            app = bridge._app  # noqa: SLF001 - the test checks the process table
            return {app.pgid} if app is not None and app.alive and app.pgid else set()
        if isinstance(bridge, ClaudeBridge):
            return {s.pid for s in bridge._clients.values() if s.pid}  # noqa: SLF001
        if isinstance(bridge, GeminiCliBridge | AcpBridge) and bridge.live.pgid:  # the live ACP agent
            return {bridge.live.pgid}
        return set()

    def strays(self, groups: set[int]) -> list[tuple[int, str]]:
        """Processes left in ``groups`` that should not be there: all but a live persistent CLI."""
        keep = self.persistent_leaders()
        return [(pid, state) for group in groups for pid, state in group_members(group)
                if not (pid in keep and state != "Z") and not (state == "Z" and _parent(pid) in keep)]


@asynccontextmanager
async def scripted_runner(runner_type: str, root: Path, monkeypatch: pytest.MonkeyPatch, *,
                          secrets: tuple[str, ...] = (), with_state_sync: bool = False,
                          **settings: Any) -> AsyncIterator[ScriptedRunner]:
    """The runner ``runner_type`` with its real CLI, served by the real app, its model a scripted server."""
    api = acp_model_api(settings) if runner_type == "acp" else None
    server = (api.scripted if api is not None else SERVERS[runner_type])().start()
    for name in OTHER_CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    for name, value in provider_environment(runner_type, server, api).items():
        monkeypatch.setenv(name, value)
    values: dict[str, Any] = {"runner_type": runner_type, "workspace_path": root / "workspace",
                              "runner_state_root": root / "state", "runner_events_dir": root / "events",
                              "runner_scripted_model": False, **HARNESS_GRACES}
    values.update(settings)
    bridge_settings = RunnerSettings(**values)
    bridge_settings.workspace_path.mkdir(parents=True, exist_ok=True)
    bridge = BRIDGES[runner_type](bridge_settings)
    try:  # one settings object for the app and the bridge, as in a pod
        async with RunnerHarness(bridge, secrets=(API_KEYS[runner_type], *secrets), with_state_sync=with_state_sync,
                                 shared_settings=bridge_settings, **values) as harness:
            yield ScriptedRunner(runner_type, harness, server, bridge)
    finally:
        server.stop()


def named_runner(name: str, root: Path, monkeypatch: pytest.MonkeyPatch,
                 **settings: Any) -> AbstractAsyncContextManager[ScriptedRunner]:
    """``scripted_runner`` for a runner of ``RUNNERS`` or ``ACP_RUNNERS``: an ACP preset with its registry entry's
    ``ACP_AGENT`` and models (``RUNNER_MODELS``, ``RUNNER_DEFAULT_MODEL``), as a pod of that entry runs it."""
    if name not in ACP_RUNNERS:
        return scripted_runner(name, root, monkeypatch, **settings)
    env = next(e for e in json.loads(REGISTRY.read_text()) if e["id"] == name)["container"]["env"]
    entry = {"acp_agent": env["ACP_AGENT"], "runner_models": env["RUNNER_MODELS"],
             "runner_default_model": env["RUNNER_DEFAULT_MODEL"]}
    return scripted_runner("acp", root, monkeypatch, **(entry | settings))


# ----- processes ---------------------------------------------------------------------------------------------
def _parent(pid: int) -> int | None:
    """The parent pid (for a zombie: one the live CLI has not collected yet is the CLI's, gone when it exits)."""
    stat = proc_stat.read_stat(pid)
    return stat.ppid if stat else None


def descendants(pid: int | None = None) -> dict[int, tuple[int, str]]:
    """pid -> (process group, state) of every descendant of ``pid`` (default: this process)."""
    return {stat.pid: (stat.pgid, stat.state) for stat in proc_stat.descendants(os.getpid() if pid is None else pid)}


def cli_groups() -> set[int]:
    """Live CLI processes: children of this process (the runner starts them) that lead their own group. A CLI's
    tools are its descendants, not ours, even when they lead groups of their own."""
    own, me = os.getpgid(0), os.getpid()
    return {pid for pid, (pgid, state) in descendants().items()
            if pid == pgid != own and state != "Z" and _parent(pid) == me}


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


async def wait_for(condition: Any, timeout: float = 90.0, what: str = "condition") -> Any:
    """Poll ``condition()`` until it returns something truthy (every 20 ms); fail after ``timeout``."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                value = condition()
                if value:
                    return value
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def wait_gone(groups: set[int], runner: ScriptedRunner, timeout: float = 20.0) -> list[tuple[int, str]]:
    """Strays in ``groups`` once they have had ``timeout`` s to go (empty when all is clean)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        strays = runner.strays(groups)
        if not strays or loop.time() > deadline:
            return strays
        await asyncio.sleep(0.1)


def environments(pid: int) -> str:
    """The environments of a process and its descendants, as /proc shows them (a credential must be in none)."""
    found = []
    for one in [pid, *descendants(pid)]:
        try:
            found.append(Path(f"/proc/{one}/environ").read_bytes().decode(errors="replace"))
        except OSError:
            continue
    return "\n".join(found)
