"""The bare persistent CLIs, driven directly (no runner), one process kept across turns as the runner keeps it:

* gemini-cli: ``gemini --acp`` with a minimal ACP client written here (JSON-RPC 2.0 over NDJSON stdio:
  ``initialize``, ``session/new``, one ``session/prompt`` per turn; the messages as in
  ``ag_ui_gemini_cli/acp_schema.py``);
* acp-<agent> (``RUNNER_TYPE=acp``, ``ACP_AGENT=<agent>``; ``acp``: opencode): the preset's agent with the same
  minimal ACP client, the command line, environment and ``session/new`` options the ACP bridge gives it (pointed at
  the scripted server of the preset's model API);
* codex-sdk: ``codex app-server`` through its SDK (``openai_codex.AsyncCodex``: ``thread_start``, a turn, its
  notification stream to ``turn/completed``);
* claude: ``ClaudeSDKClient`` (one Claude Code process: ``query`` then ``receive_response`` to the ``ResultMessage``).

Each uses the CLI home, settings and environment the runner's bridge prepares (``turns.BareCli``), except that it
talks to the scripted model directly, not through the model proxy (the proxy is part of the runner's cost).
A turn returns (seconds to the first text, seconds to the end of the turn), from the moment the prompt is sent;
``new=True`` starts a new thread first, inside the time (a session on the live ACP process, a thread on the live
app-server, a new Claude Code process: what the runner does for a new AG-UI thread). ``thread`` names the thread,
so one bare CLI holds several the way the runner holds them: Gemini's sessions in the one ACP process, Codex's
threads in the one app-server, a Claude Code process each.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

TURN_TIMEOUT = 300.0


def runner_of(kind: str) -> tuple[str, str]:
    """A bench kind, a runner type or ``acp-<agent>`` (``acp``: opencode): its RUNNER_TYPE and ACP_AGENT."""
    if kind == "acp":
        return "acp", "opencode"
    if kind.startswith("acp-"):
        return "acp", kind.removeprefix("acp-")
    return kind, ""


class BareAcp:
    """A minimal ACP client on ``gemini --acp``: a session per thread, one ``session/prompt`` per turn."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, meta: dict[str, Any] | None = None) -> None:
        self.argv, self.env, self.cwd = argv, env, cwd
        self.meta = {"_meta": meta} if meta else {}  # the agent's own session options, as the bridge sends them
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._first_text: float | None = None
        self.sessions: dict[str, str] = {}  # thread -> its ACP session id

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, cwd=self.cwd, env=self.env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, limit=64 * 1024 * 1024, start_new_session=True)
        self._reader = asyncio.create_task(self._read())
        await self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}})

    async def _new_session(self, thread: str) -> None:
        self.sessions[thread] = (await self.request("session/new", {"cwd": str(self.cwd), "mcpServers": [],
                                                                   **self.meta}))[
            "sessionId"]

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        reply = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        async with asyncio.timeout(TURN_TIMEOUT):
            message = await reply
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message.get("result") or {}

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        await self.proc.stdin.drain()

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            message = json.loads(raw)
            method = message.get("method")
            if method is not None and "id" in message:  # the agent asks (a permission): allow once
                options = message.get("params", {}).get("options") or [{}]
                allow = next((o for o in options if o.get("kind") == "allow_once"), options[0])
                await self._send({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "outcome": {"outcome": "selected", "optionId": allow.get("optionId", "proceed_once")}}})
            elif method == "session/update":
                update = message["params"]["update"]
                if self._first_text is None and update.get("sessionUpdate") == "agent_message_chunk":
                    self._first_text = time.monotonic()
            elif method is None and message.get("id") in self._waiting:
                self._waiting.pop(message["id"]).set_result(message)

    async def turn(self, prompt: str, new: bool = False, thread: str = "") -> tuple[float, float]:
        self._first_text = None
        started = time.monotonic()
        if new:
            await self._new_session(thread)
        result = await self.request("session/prompt", {"sessionId": self.sessions[thread],
                                                       "prompt": [{"type": "text", "text": prompt}]})
        end = time.monotonic()
        assert result.get("stopReason") == "end_turn" and self._first_text is not None, result
        return self._first_text - started, end - started

    async def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, 9)
        await self.proc.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader


class BareCodex:
    """``codex app-server`` through its SDK: a Codex thread per thread, one turn per prompt."""

    def __init__(self, codex_bin: str, overrides: list[str], env: dict[str, str], cwd: Path, model: str) -> None:
        from openai_codex import AsyncCodex, CodexConfig  # noqa: PLC0415

        full_env = {name: "" for name in os.environ if name not in env} | env
        argv = (shutil.which("setsid") or "/usr/bin/setsid", codex_bin, "app-server", *overrides,
                "--listen", "stdio://")
        self.codex = AsyncCodex(CodexConfig(launch_args_override=argv, cwd=str(cwd), env=full_env))
        self.cwd, self.model = cwd, model
        self.threads: dict[str, Any] = {}  # thread -> its Codex thread

    async def start(self) -> None:
        from openai_codex import ApprovalMode  # noqa: PLC0415

        await self.codex.__aenter__()
        self._mode = ApprovalMode.deny_all

    async def turn(self, prompt: str, new: bool = False, thread: str = "") -> tuple[float, float]:
        # The runner's own call (``session.start_turn``: the SDK's turn/start with approval policy ``never``).
        from ambient_runner.bridges.codex_sdk.session import start_turn  # noqa: PLC0415

        started = time.monotonic()
        first = None
        if new:
            self.threads[thread] = await self.codex.thread_start(approval_mode=self._mode, cwd=str(self.cwd),
                                                                 model=self.model)
        handle = await start_turn(self.threads[thread], prompt, ask=False, cwd=self.cwd, model=self.model)
        async with asyncio.timeout(TURN_TIMEOUT):
            async for event in handle.stream():
                if first is None and event.method == "item/agentMessage/delta":
                    first = time.monotonic()
        end = time.monotonic()
        assert first is not None
        return first - started, end - started

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.codex.close(), timeout=10)


class BareClaude:
    """``ClaudeSDKClient``: a Claude Code process per thread, a ``query`` per turn."""

    def __init__(self, cli: str, env: dict[str, str], cwd: Path, setting_sources: list[Any]) -> None:
        from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient  # noqa: PLC0415

        self.options = ClaudeAgentOptions(
            cli_path=cli, cwd=cwd, env=env, permission_mode="bypassPermissions", include_partial_messages=True,
            setting_sources=setting_sources, system_prompt={"type": "preset", "preset": "claude_code"})
        self._client_class = ClaudeSDKClient
        self.clients: dict[str, Any] = {}  # thread -> its Claude Code process's client

    async def start(self) -> None:
        pass  # a Claude Code process per thread, as the runner keeps one: started by a thread's first turn

    async def turn(self, prompt: str, new: bool = False, thread: str = "") -> tuple[float, float]:
        from claude_agent_sdk import ResultMessage  # noqa: PLC0415
        from claude_agent_sdk.types import StreamEvent  # noqa: PLC0415

        started = time.monotonic()
        first = None
        if new:
            await self._disconnect(self.clients.pop(thread, None))
            client = self.clients[thread] = self._client_class(self.options)
            await client.connect()
        client = self.clients[thread]
        await client.query(prompt)
        async with asyncio.timeout(TURN_TIMEOUT):
            async for message in client.receive_response():
                if first is None and isinstance(message, StreamEvent) and \
                        message.event.get("delta", {}).get("type") == "text_delta":
                    first = time.monotonic()
                if isinstance(message, ResultMessage):
                    assert not message.is_error, message
        end = time.monotonic()
        assert first is not None
        return first - started, end - started

    async def close(self) -> None:
        clients, self.clients = self.clients, {}
        for client in clients.values():
            await self._disconnect(client)

    @staticmethod
    async def _disconnect(client: Any) -> None:
        if client is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.disconnect(), timeout=10)


def persistent(cli: Any) -> Any:
    """The bare persistent CLI for ``cli`` (a ``turns.BareCli``: its bridge's home, settings and scripted server),
    pointed at the scripted model directly. Not started yet."""
    bridge = cli.bridge
    proxy, bridge.model_proxy = bridge.model_proxy, None  # the environments below without the proxy
    try:
        cwd = cli.settings.workspace_path
        if cli.runner_type == "gemini-cli":
            command = bridge._acp_command()
            return BareAcp(command.argv, command.env, command.cwd)
        if cli.runner_type == "acp":  # the preset's agent as the bridge starts it (its HOME in the state dir)
            command = bridge._command()
            return BareAcp(command.argv, command.env, command.cwd, bridge.live.session_meta)
        if cli.runner_type == "claude":
            from ambient_runner.bridges.claude.config import (  # noqa: PLC0415
                claude_environment,
                find_cli,
                setting_sources,
            )

            env = {k: v for k, v in claude_environment(cli.settings, bridge.auth.env).items() if v}
            return BareClaude(str(find_cli(cli.settings)), env, cwd, setting_sources(cli.settings))
        overrides, env = bridge._configure()
        if bridge.path_dir:
            env["PATH"] = f"{bridge.path_dir}:{env.get('PATH', '')}"
        return BareCodex(str(bridge.codex_bin), overrides, env, cwd, bridge.default_model)
    finally:
        bridge.model_proxy = proxy


def runner_env(kind: str, root: str, model_url: str | None) -> dict[str, str]:
    """A runner's environment in ``root`` (its workspace made there); its model is ``model_url`` reached as a model
    API (the bench's scripted server, the one the bare CLIs use: a scripted server in the runner's own process would
    parse every request, the whole history, there, which is the test model's cost, not the runner's), or the
    runner's own scripted model when None."""
    Path(root, "workspace").mkdir()
    runner_type, agent = runner_of(kind)
    env = {"RUNNER_TYPE": runner_type, "ACP_AGENT": agent, "RUNNER_SCRIPTED_MODEL": "true",
           "WORKSPACE_PATH": f"{root}/workspace", "RUNNER_STATE_ROOT": f"{root}/state",
           "RUNNER_EVENTS_DIR": f"{root}/events"}
    if model_url is not None:
        env |= {"RUNNER_SCRIPTED_MODEL": "false", **model_api_env(kind, model_url)}
    return {k: v for k, v in env.items() if v}


def model_api_env(kind: str, url: str) -> dict[str, str]:
    """The environment that gives the runner ``url`` as its model API, with a key (the scripted server takes any)."""
    runner_type, agent = runner_of(kind)
    if runner_type == "gemini-cli":
        return {"GEMINI_API_KEY": "bench-key-not-a-secret", "GOOGLE_GEMINI_BASE_URL": url}
    if runner_type == "codex-sdk":
        return {"OPENAI_API_KEY": "sk-bench-not-a-secret", "OPENAI_BASE_URL": f"{url}/v1"}
    if runner_type == "acp":  # the preset's model API
        from ambient_runner.bridges.acp.presets import preset_of  # noqa: PLC0415

        preset = preset_of(agent)
        assert preset is not None, f"no ACP preset {agent!r}"
        api = preset.model_api
        return {"ACP_AGENT": agent, **api.deployment(url, "sk-bench-not-a-secret")}
    return {"ANTHROPIC_API_KEY": "sk-ant-bench-not-a-secret", "ANTHROPIC_BASE_URL": url}
