"""Each pinned ACP agent (package.json's devDependencies, issue 48) starts and answers one prompt turn over ACP on a
scripted model server, inside the loopback-only network namespace: JSON-RPC over stdio, ``initialize`` (protocol
version 1), ``session/new`` (the workspace as ``cwd``, no MCP servers), one ``session/prompt`` whose scripted
answer is words (``NOTOOL``), and the answer's text must arrive as ``agent_message_chunk`` updates. A probe of the
pins for the coming ACP bridge, not of the runner: it speaks ACP itself, as ``../shared/research/acp-agents.md``
describes each agent offline. Agent-to-client requests other than a permission are answered -32601 at once, as
the bridge must.

opencode and Qwen Code run on the scripted Chat Completions server (the ``openai-chat`` API), claude-agent-acp on
the Anthropic one, codex-acp on the Responses one (its provider set over ACP: it ignores ``OPENAI_BASE_URL``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer
from ambient_runner.scripted_models.base import PLAIN_ANSWER, ScriptedModelServer
from ambient_runner.scripted_models.openai_chat import OpenAIChatServer
from ambient_runner.scripted_models.openai_responses import OpenAIResponsesServer

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
KEY = "sk-scripted-acp-probe"
TURN_TIMEOUT = 90.0
pytestmark = [pytest.mark.real_cli, pytest.mark.slow, pytest.mark.usefixtures("isolated_network")]

# Every agent: no telemetry, no update check, no error reporting, nothing fetched at start.
QUIET = {"DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
         "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
         "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_SHARE": "1",
         "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "GEMINI_TELEMETRY_ENABLED": "false", "NO_UPDATE_NOTIFIER": "1",
         "NO_BROWSER": "1", "DO_NOT_TRACK": "1"}


@dataclass(frozen=True)
class Agent:
    name: str
    server: type[ScriptedModelServer]
    argv: Callable[[], list[str]]
    env: Callable[[ScriptedModelServer, Path], dict[str, str]]
    endpoint: str  # the model API path its turn must reach
    before_session: Callable[[ScriptedModelServer], list[tuple[str, dict[str, Any]]]] = lambda server: []


def opencode_env(server: ScriptedModelServer, home: Path) -> dict[str, str]:
    config = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
              "model": "scripted/scripted-chat", "small_model": "scripted/scripted-chat",
              "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
                                        "options": {"baseURL": f"{server.base_url}/v1", "apiKey": KEY},
                                        "models": {"scripted-chat": {"name": "Scripted chat"}}}}}
    return {"OPENCODE_CONFIG_CONTENT": json.dumps(config)}


def claude_env(server: ScriptedModelServer, home: Path) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": KEY, "IS_SANDBOX": "1",
            "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CLAUDE_CODE_MAX_RETRIES": "0"}


def codex_env(server: ScriptedModelServer, home: Path) -> dict[str, str]:
    (home / ".codex").mkdir()  # Codex refuses a CODEX_HOME that does not exist
    return {"CODEX_HOME": str(home / ".codex"), "OPENAI_API_KEY": KEY}


def codex_provider(server: ScriptedModelServer) -> list[tuple[str, dict[str, Any]]]:
    return [("providers/set", {"providerId": "openai", "apiType": "openai", "baseUrl": f"{server.base_url}/v1",
                               "headers": {"authorization": f"Bearer {KEY}"}})]


def qwen_env(server: ScriptedModelServer, home: Path) -> dict[str, str]:
    return {"OPENAI_BASE_URL": f"{server.base_url}/v1", "OPENAI_API_KEY": KEY, "OPENAI_MODEL": "scripted-chat"}


AGENTS = [
    Agent("opencode", OpenAIChatServer, lambda: [str(BIN / "opencode"), "acp", "--pure"], opencode_env,
          "/v1/chat/completions"),
    Agent("claude-agent-acp", AnthropicScriptedServer, lambda: [str(BIN / "claude-agent-acp")], claude_env,
          "/v1/messages"),
    Agent("codex-acp", OpenAIResponsesServer, lambda: [str(BIN / "codex-acp")], codex_env, "/v1/responses",
          codex_provider),
    Agent("qwen-code", OpenAIChatServer,
          lambda: [str(BIN / "qwen"), "--acp", "--auth-type", "openai", "--model", "scripted-chat"], qwen_env,
          "/v1/chat/completions"),
]


class AcpPeer:
    """The client side of ACP over an agent's stdio: newline-delimited JSON-RPC 2.0."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.updates: list[dict[str, Any]] = []
        self.unknown: list[str] = []
        self._ids = iter(range(1, 1_000_000))
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def request(self, method: str, params: dict[str, Any], timeout: float = TURN_TIMEOUT) -> dict[str, Any]:
        request_id = next(self._ids)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answer
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        reply = await asyncio.wait_for(answer, timeout)
        assert "error" not in reply, f"{method}: {reply['error']}"
        return reply["result"]

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            try:
                message = json.loads(line)
            except ValueError:
                continue  # a stray line of output
            if "method" not in message:
                waiting = self._waiting.pop(message.get("id"), None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(message)
            elif message["method"] == "session/update":
                self.updates.append(message["params"]["update"])
            elif "id" in message:
                await self._answer(message)
            else:
                self.unknown.append(message["method"])  # a notification the client does not know: ignored
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(EOFError("the agent closed its output"))

    async def _answer(self, message: dict[str, Any]) -> None:
        if message["method"] == "session/request_permission":  # not expected for NOTOOL: allow once if asked
            options = message["params"].get("options") or []
            chosen = next((o for o in options if o.get("kind") == "allow_once"), options[0] if options else {})
            result = {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}
            await self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return
        self.unknown.append(message["method"])
        await self._send({"jsonrpc": "2.0", "id": message["id"],
                          "error": {"code": -32601, "message": f"method not found: {message['method']}"}})

    def text(self) -> str:
        return "".join(u["content"].get("text", "") for u in self.updates
                       if u.get("sessionUpdate") == "agent_message_chunk" and isinstance(u.get("content"), dict))

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)  # the agent's whole group (agents leave helpers behind)
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            await self.process.wait()


@pytest.fixture(params=AGENTS, ids=[agent.name for agent in AGENTS])
def agent(request: pytest.FixtureRequest) -> Agent:
    chosen: Agent = request.param
    if not Path(chosen.argv()[0]).exists():
        pytest.fail(f"{chosen.name} is not installed: run `make install` (package.json pins it)")
    return chosen


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    home, work = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    work.mkdir()
    yield home, work


async def test_the_agent_answers_one_prompt_over_acp(agent: Agent, workspace: tuple[Path, Path]) -> None:
    home, work = workspace
    with agent.server() as server:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
               "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
               "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_CACHE_HOME": str(home / ".cache"),
               "TMPDIR": str(home), "NO_PROXY": "127.0.0.1,localhost", **QUIET, **agent.env(server, home)}
        stderr = (home / "stderr.log").open("wb")
        process = await asyncio.create_subprocess_exec(
            *agent.argv(), cwd=work, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=stderr, start_new_session=True, limit=16 * 1024 * 1024)
        peer = AcpPeer(process)
        try:
            init = await peer.request("initialize", {
                "protocolVersion": 1, "clientInfo": {"name": "ambient-runner-probe", "version": "0"},
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}})
            assert init["protocolVersion"] == 1, init
            for method, params in agent.before_session(server):
                await peer.request(method, params)
            session = await peer.request("session/new", {"cwd": str(work), "mcpServers": []})
            done = await peer.request("session/prompt", {"sessionId": session["sessionId"], "prompt": [
                {"type": "text", "text": "NOTOOL say hello"}]})
        except (AssertionError, TimeoutError, EOFError) as exc:
            stderr.flush()
            tail = (home / "stderr.log").read_text(errors="replace")[-3000:]
            raise AssertionError(f"{agent.name}: {exc!r}\nmodel requests: {[r.path for r in server.requests]}\n"
                                 f"stderr:\n{tail}") from exc
        finally:
            await peer.close()
            stderr.close()
    assert done["stopReason"] == "end_turn", done
    assert "".join(PLAIN_ANSWER) in peer.text(), (peer.text(), peer.updates[-5:])
    turns = [r for r in server.requests if r.method == "POST" and r.path.split("?")[0] == agent.endpoint]
    assert turns, [r.path for r in server.requests]
    assert all(KEY in json.dumps(r.headers) for r in turns)  # the key it was given, as a model API gets it
