"""RUNNER_TYPE=acp with ACP_AGENT=opencode, end to end: the real ``opencode acp`` (one live process for the pod) on
the scripted Anthropic Messages server (its default model API; Chat Completions in the last test), through the
model proxy, the real service over HTTP/SSE (every stream
through ``check_stream`` and ag-ui-validate), inside the loopback-only network namespace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp_agent_tests import (
    AFTER_THE_LONG_COMMAND,
    KILL_PROMPTS,
    MCP_SERVERS,
    QUEUE_PROMPTS,
    images_reach_the_model,
    interrupted_mid_command,
    killed_mid_turn_then_next,
    mcp_tool_answered,
    queued_while_streaming,
)
from pausing import ASK, WRITE, answer, interrupts_of, is_cli_result
from runners import ScriptedRunner, environments, scripted_runner

from ambient_runner.bridges.acp.bridge import AcpBridge
from ambient_runner.scripted_models.anthropic import THINKING_TEXT, AnthropicScriptedServer

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]

PLAIN = ["Hello from the scripted model.", " No tools were needed."]


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def bridge_of(runner: ScriptedRunner) -> AcpBridge:
    assert isinstance(runner.bridge, AcpBridge)
    return runner.bridge


def model_requests(runner: ScriptedRunner, path: str = "/v1/messages") -> list[dict[str, Any]]:
    """The bodies of the agent's requests to its model API (those offering tools: not a session's title)."""
    return [r.body for r in runner.server.requests if r.path.split("?")[0].endswith(path) and r.body.get("tools")]


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user's words in a request (Messages or Chat Completions: text parts of the user's messages)."""
    found = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        found.extend([content] if isinstance(content, str) else
                     [p["text"] for p in content if p.get("type") == "text" and p.get("text")])
    return found


def header(request: Any, name: str) -> str | None:
    return {k.lower(): v for k, v in request.headers.items()}.get(name)


async def test_a_text_turn_then_a_second_that_continues(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, acp_agent="opencode",
                               runner_approval_policy="auto") as runner:
        first = await runner.harness.run("t-text", "NOTOOL hello")
        pid = bridge_of(runner).live.pgid
        second = await runner.harness.run("t-text", "NOTOOL and again")
        assert bridge_of(runner).live.pgid == pid  # one process for the pod's turns
    assert types(first) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
                            "TEXT_MESSAGE_END", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert texts(first) == texts(second) == PLAIN
    assert not [e for e in first if "rawEvent" in e]  # every field opencode sends is known
    (usage,) = first[-1]["usage"]
    assert (usage["provider"], usage["model"]) == ("anthropic", "claude-sonnet-5") and usage["outputTokens"] > 0
    assert user_texts(model_requests(runner)[-1])[-2:] == ["NOTOOL hello", "NOTOOL and again"]


async def test_a_tool_call_creates_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as runner:
        runner.server.shell_command = "echo made-by-opencode > created.txt"
        events = await runner.harness.run("t-tool", "make the file")
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    arguments = next(e for e in events if e["type"] == "TOOL_CALL_ARGS")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert start["toolCallName"] == "bash"
    assert json.loads(arguments["delta"])["command"] == "echo made-by-opencode > created.txt"
    assert result["toolCallId"] == start["toolCallId"] and result["content"].strip()
    assert (runner.settings.workspace_path / "created.txt").read_text() == "made-by-opencode\n"
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_interrupt_is_cancelled_and_the_next_run_works(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as runner:
        await runner.harness.run("t-cancel", "NOTOOL first")
        pid = bridge_of(runner).live.pgid
        events = await runner.interrupted_answer("t-cancel")
        after = await runner.harness.run("t-cancel", "NOTOOL continue")
        assert bridge_of(runner).live.pgid == pid  # the cancel kept the process
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}
    assert texts(after) == PLAIN
    assert user_texts(model_requests(runner)[-1])[0] == "NOTOOL first"  # the same session goes on


async def test_the_model_key_stays_in_the_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as runner:
        await runner.harness.run("t-key", "NOTOOL hello")
        bridge = bridge_of(runner)
        assert bridge.model_proxy is not None
        placeholder = bridge.model_proxy.placeholder
        environment = bridge._environment()  # noqa: SLF001 - what the agent is started with
        pid = bridge.live.pgid
        assert pid is not None
        seen = environments(pid)
    assert runner.api_key not in seen and runner.api_key not in repr(environment)
    assert placeholder in environment["OPENCODE_CONFIG_CONTENT"]
    assert runner.server.requests
    assert all(header(r, "x-api-key") == runner.api_key for r in runner.server.requests)


async def test_an_approval_is_asked_and_the_approved_command_runs_once(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch) as runner:
        out = runner.settings.workspace_path / "out.txt"
        events = await runner.harness.run("t-approve", WRITE, ASK)
        (interrupt,) = interrupts_of(events)
        call = next(e for e in events if e["type"] == "TOOL_CALL_START")
        assert call["toolCallName"] == "bash"
        assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"] == call["toolCallId"]
        assert interrupt["metadata"]["toolName"] == "bash"
        assert interrupt["message"].startswith("opencode wants to run a command")
        assert not out.exists()
        pid = bridge_of(runner).live.pgid
        resumed = await runner.harness.post(answer("t-approve", interrupt, {"approved": True}))
        assert bridge_of(runner).live.pgid == pid  # the same live agent went on
    assert next(e for e in resumed if is_cli_result(e))["toolCallId"] == call["toolCallId"]
    assert resumed[-1]["type"] == "RUN_FINISHED" and resumed[-1].get("outcome") in (None, {"type": "success"})
    assert out.read_text() == "hello\n"


async def test_a_refused_command_never_runs_and_the_persons_words_reach_the_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    why = "use a temp dir instead"
    async with scripted_runner("acp", tmp_path, monkeypatch) as runner:
        events = await runner.harness.run("t-refuse", WRITE, ASK)
        (interrupt,) = interrupts_of(events)
        resumed = await runner.harness.post(answer("t-refuse", interrupt, {"approved": False, "message": why}))
        later = await runner.harness.run("t-refuse", "NOTOOL what now?")
    result = next(e for e in resumed if is_cli_result(e))
    assert result["toolCallId"] == interrupt["toolCallId"] and result["content"] == why
    assert resumed[-1]["type"] == "RUN_FINISHED" and not resumed[-1].get("outcome")
    assert not (runner.settings.workspace_path / "out.txt").exists()
    assert texts(later) == PLAIN
    assert why in str(runner.server.requests[-1].body)  # the next prompt told the model why


@pytest.mark.slow
async def test_a_restart_on_the_same_state_dir_continues_the_thread(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as runner:
        await runner.harness.run("t-restart", "NOTOOL remember the word tangerine")
        session = bridge_of(runner).sessions.get("t-restart")
    assert session is not None
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as again:
        events = await again.harness.run("t-restart", "NOTOOL which word?")
        assert bridge_of(again).sessions.get("t-restart") == session  # loaded, not a new session
    assert texts(events) == PLAIN
    assert user_texts(model_requests(again)[-1])[-2:] == ["NOTOOL remember the word tangerine", "NOTOOL which word?"]


async def test_the_model_switches_by_the_sessions_config_option(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto",
                               runner_models="claude-sonnet-5,claude-haiku-4-5") as runner:
        await runner.harness.run("t-model", "NOTOOL hello")
        first = model_requests(runner)[-1]["model"]
        switched = await runner.harness.run("t-model", "NOTOOL and now?", {"model": "claude-haiku-4-5"})
        second = model_requests(runner)[-1]["model"]
        sessions = list(bridge_of(runner).live.sessions.values())
    assert (first, second) == ("claude-sonnet-5", "claude-haiku-4-5")
    assert texts(switched) == PLAIN
    assert [s.model_option for s in sessions] == ["model"] and sessions[0].model == "ambient-proxy/claude-haiku-4-5"


async def test_runner_scripted_model_runs_it_on_the_offline_anthropic_server(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto",
                               runner_scripted_model=True) as runner:
        events = await runner.harness.run("t-offline", "NOTOOL hello")
        offline = bridge_of(runner).scripted
    assert isinstance(offline, AnthropicScriptedServer) and offline.requests
    assert not runner.server.requests  # the configured endpoint was not used
    assert texts(events) == PLAIN


async def test_images_reach_the_model_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as runner:
        await images_reach_the_model(runner, "t-image", "source")


@pytest.mark.slow
async def test_interrupt_mid_command_stops_it_and_keeps_the_session(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as runner:
        mid = await interrupted_mid_command(runner, "t-tool-cancel")
    call = next(e for e in mid.interrupted if e["type"] == "TOOL_CALL_START")
    assert call["toolCallName"] == "bash"
    # its model is told, with the next prompt, that the person stopped the command (its output so far)
    (request,) = [b for b in model_requests(runner) if AFTER_THE_LONG_COMMAND in user_texts(b)]
    (result,) = [p for m in request["messages"] if m["role"] == "user" and isinstance(m["content"], list)
                 for p in m["content"] if p.get("type") == "tool_result" and p["tool_use_id"] == call["toolCallId"]]
    assert "User aborted the command" in result["content"] and "late" not in result["content"]


@pytest.mark.slow
async def test_the_agent_killed_mid_turn_is_an_error_and_the_next_turn_continues(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # On Chat Completions: opencode keeps the killed turn's prompt, unanswered, and on the Anthropic API joins it with
    # the next prompt into one user message (the roles must alternate), where the scripted server's keywords would
    # answer the older one (SLOW) instead of the next prompt.
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto",
                               acp_agent_model_api="openai-chat") as runner:
        await killed_mid_turn_then_next(runner, "t-kill")
    requests = model_requests(runner, "/chat/completions")
    assert user_texts(requests[-1])[0] == KILL_PROMPTS[0]  # the session was loaded


async def test_the_runners_mcp_servers_reach_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto",
                               mcp_servers_json=MCP_SERVERS) as runner:
        start, result = await mcp_tool_answered(runner, "t-mcp")
    assert result["content"].startswith("echo: ") and result["toolCallId"] == start["toolCallId"]


async def test_capabilities_name_the_agent_and_what_it_reports(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto",
                               runner_models="claude-sonnet-5,claude-haiku-4-5") as runner:
        await runner.harness.run("t-caps", "NOTOOL hello")
        caps = (await runner.harness.client.get("/capabilities")).json()
    custom = caps["custom"]
    assert custom["runnerType"] == "acp" and custom["models"] == ["claude-sonnet-5", "claude-haiku-4-5"]
    agent = custom["agent"]
    assert agent["preset"] == "opencode" and agent["name"] and agent["version"]
    # the deployment's models, none of opencode's own cloud
    assert set(agent["models"]) == {"ambient-proxy/claude-sonnet-5", "ambient-proxy/claude-haiku-4-5"}
    assert caps["reasoning"]["supported"] is True and custom["mcp"] is True


async def test_thoughts_are_one_reasoning_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as runner:
        events = await runner.harness.run("t-think", "THINK NOTOOL hello")
    assert types(events) == [
        "RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    thought = "".join(e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert thought == "".join(THINKING_TEXT)


async def test_a_message_for_a_busy_thread_is_queued_and_runs_next(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto") as runner:
        await queued_while_streaming(runner, "t-busy")
    assert user_texts(model_requests(runner)[-1])[-2:] == list(QUEUE_PROMPTS)


async def test_on_the_openai_chat_completions_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ACP_AGENT_MODEL_API=openai-chat: opencode's OpenAI-compatible provider (bundled in its binary) on the scripted
    Chat Completions server through the model proxy: a tool call that creates a file, then a text turn that
    continues, an image in Chat Completions' own form, and an MCP tool's call answered."""
    async with scripted_runner("acp", tmp_path, monkeypatch, acp_agent_model_api="openai-chat",
                               runner_approval_policy="auto", mcp_servers_json=MCP_SERVERS) as runner:
        runner.server.shell_command = "echo made-on-chat > created.txt"
        events = await runner.harness.run("t-chat", "make the file")
        later = await runner.harness.run("t-chat", "NOTOOL and now?")
        await images_reach_the_model(runner, "t-chat-image", "image_url")
        await mcp_tool_answered(runner, "t-chat-mcp")
    assert (runner.settings.workspace_path / "created.txt").read_text() == "made-on-chat\n"
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert start["toolCallName"] == "bash" and result["content"].strip()
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert texts(later) == PLAIN
    (usage,) = later[-1]["usage"]
    assert (usage["provider"], usage["model"]) == ("openai", "gpt-4.1")
    chats = [r for r in runner.server.requests if r.path.split("?")[0].endswith("/chat/completions")]
    (continued,) = [b for b in model_requests(runner, "/chat/completions") if "NOTOOL and now?" in user_texts(b)]
    assert user_texts(continued)[-2:] == ["make the file", "NOTOOL and now?"]
    assert chats and all(r.body["model"] == "gpt-4.1" for r in chats)
    assert all(header(r, "authorization") == f"Bearer {runner.api_key}" for r in chats)
