"""One bridge of each runner type on its built-in scripted model, served through RunnerHarness.

Used by the MCP and run-option tests, which run the same scenario on all three runners:

    async with runner_kit("codex-sdk", tmp_path, mcp_servers_json=...) as kit:
        events = await kit.runner.run("t", "MCPTOOL:echo.say")
        kit.model_requests()          # the scripted model's request log
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ag_ui.core import RunAgentInput, UserMessage
from events import wire
from harness import RunnerHarness

from ambient_runner.bridges.base import CliBridge
from ambient_runner.bridges.claude.bridge import ClaudeBridge
from ambient_runner.bridges.codex_sdk.bridge import CodexBridge
from ambient_runner.bridges.contract import Bridge, BridgeError, Turn
from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.bridges.options import RunOptions
from ambient_runner.scripted_models.base import LoggedRequest, ScriptedModelServer
from ambient_runner.settings import RunnerSettings

RUNNERS = ("gemini-cli", "codex-sdk", "claude")
BRIDGES: dict[str, type[Bridge]] = {"gemini-cli": GeminiCliBridge, "codex-sdk": CodexBridge, "claude": ClaudeBridge}
# Credentials that would make a bridge pick another auth than its scripted model: removed for these tests.
CREDENTIAL_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GEMINI_OAUTH_CREDS_FILE",
                        "OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_AUTH_JSON_FILE", "OPENAI_BASE_URL",
                        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                        "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL")


@dataclass
class RunnerKit:
    runner_type: str
    settings: RunnerSettings
    bridge: CliBridge[Any]
    runner: RunnerHarness

    @property
    def model_server(self) -> ScriptedModelServer:
        server = self.bridge.scripted
        assert server is not None, "the bridge has no scripted model server"
        return server

    def model_requests(self) -> list[LoggedRequest]:
        """Requests that asked for a model answer (not token counts or utility calls)."""
        return [r for r in self.model_server.requests if r.method == "POST" and (
            "generatecontent" in r.path.lower() or r.path.split("?")[0].endswith(("/responses", "/v1/messages")))]

    def requested_models(self) -> list[str]:
        models = []
        for request in self.model_requests():
            if self.runner_type == "gemini-cli":
                models.append(request.path.split("/models/", 1)[1].split(":", 1)[0])
            elif isinstance(request.body, dict):
                models.append(str(request.body.get("model")))
        return models


def make_turn(thread_id: str, prompt: str, run_id: str = "run-1", model: str | None = None) -> Turn:
    """A bridge's turn of one user message, as the core would hand it over (for the bridge tests)."""
    run_input = RunAgentInput(thread_id=thread_id, run_id=run_id, state=None, tools=[], context=[],
                              forwarded_props=None, messages=[UserMessage(id=f"u-{run_id}", content=prompt)])
    return Turn(thread_id=thread_id, run_id=run_id, prompt=prompt, input=run_input, options=RunOptions(model=model))


async def collect(bridge: Bridge, turn: Turn) -> list[dict[str, Any]]:
    """A bridge's ``run_turn`` events as wire dicts; a BridgeError becomes a final RUN_ERROR entry (with the
    stderr tail it carried)."""
    events: list[dict[str, Any]] = []
    try:
        async for event in bridge.run_turn(turn):
            events.append(wire(event))
    except BridgeError as exc:
        events.append({"type": "RUN_ERROR", "message": exc.message, "code": exc.code, "stderr": exc.stderr_tail})
    return events


def make_settings(runner_type: str, root: Path, **overrides: Any) -> RunnerSettings:
    values: dict[str, Any] = {"runner_type": runner_type, "workspace_path": root / "workspace",
                              "runner_state_root": root / "state", "runner_scripted_model": True,
                              "runner_events_dir": root / "events"}
    values.update(overrides)
    settings = RunnerSettings(**values)
    settings.workspace_path.mkdir(parents=True, exist_ok=True)
    return settings


@asynccontextmanager
async def runner_kit(runner_type: str, root: Path, **overrides: Any) -> AsyncIterator[RunnerKit]:
    """The bridge (built with these settings) served by the real app. Call with credentials removed from the
    environment (``clean_credentials``) and inside the ``isolated_network`` fixture."""
    settings = make_settings(runner_type, root, **overrides)
    bridge = BRIDGES[runner_type](settings)
    harness_settings = {k: v for k, v in settings.model_dump().items() if v is not None and k != "agui_token"}
    async with RunnerHarness(bridge, **harness_settings) as runner:
        yield RunnerKit(runner_type, settings, bridge, runner)


def clean_credentials(monkeypatch: Any) -> None:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_CLI_MAX_ATTEMPTS", "1")


def files_containing(root: Path, needle: str) -> list[Path]:
    """Files under ``root`` whose bytes contain ``needle``."""
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory) / name
            try:
                if needle.encode() in path.read_bytes():
                    found.append(path)
            except OSError:
                continue
    return found
