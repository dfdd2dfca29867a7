"""RUNNER_TYPE=acp with ACP_AGENT=claude-agent-acp, end to end: the real ``claude-agent-acp`` (Claude Code over ACP,
one live process for the pod) on the scripted Anthropic Messages server, through the model proxy, the real service
over HTTP/SSE (every stream through ``check_stream`` and ag-ui-validate), inside the loopback-only network
namespace. One runner serves the module's threads (each test its own thread); a restart and the offline scripted
model have runners of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp_agent_tests as shared
import pytest
from acp_agent_tests import PLAIN, bridge_of, module_patch, scripted_as_it_was, texts
from runners import ScriptedRunner, scripted_runner

from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network"),
              pytest.mark.asyncio(loop_scope="module")]

MODELS = "claude-sonnet-5-5,claude-haiku-5-5"
CLAUDE = shared.preset_settings("claude-agent-acp", MODELS)
runner = shared.module_runner("claude", CLAUDE)
__all__ = ["module_patch", "scripted_as_it_was"]  # fixtures the module uses


def turns(runner: ScriptedRunner, word: str) -> list[dict[str, Any]]:
    """The bodies of the agent's model requests (those offering tools: not its session titles) that hold ``word``."""
    return [r.body for r in runner.server.requests if r.body.get("tools") and word in json.dumps(r.body)]


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user's words in a Messages request (not the tool results nor Claude Code's reminders)."""
    found = []
    for message in body["messages"]:
        content = message["content"] if message["role"] == "user" else []
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        found += [p["text"] for p in parts if p.get("type") == "text" and not p["text"].startswith("<")]
    return found


async def test_a_tool_call_creates_a_file_and_the_next_turn_continues(runner: ScriptedRunner) -> None:
    runner.server.shell_command = "echo made-by-claude > created.txt"
    turn = await shared.tool_turn_then_next(runner, "t-tool", "make the file, says tangerine", "NOTOOL and now?")
    assert turn.start["toolCallName"] == "Bash" and turn.arguments["command"] == "echo made-by-claude > created.txt"
    assert (runner.settings.workspace_path / "created.txt").read_text() == "made-by-claude\n"
    (usage,) = turn.events[-1]["usage"]
    assert usage["provider"] == "anthropic" and usage["model"] == "claude-sonnet-5-5"
    assert user_texts(turns(runner, "NOTOOL and now?")[-1])[-2:] == ["make the file, says tangerine",
                                                                     "NOTOOL and now?"]


async def test_thoughts_are_one_reasoning_block(runner: ScriptedRunner) -> None:
    events = await runner.harness.run("t-think", "THINK NOTOOL hello")
    reasoning = [e for e in events if e["type"] == "REASONING_MESSAGE_START"]
    assert len(reasoning) == 1 and texts(events) == PLAIN


async def test_the_cards_approve_runs_the_command_once(runner: ScriptedRunner) -> None:
    await shared.approved_from_the_card(runner, "t-approve", "Bash", "Claude")


async def test_a_deny_from_the_card_never_runs_and_the_persons_words_reach_the_model(runner: ScriptedRunner) -> None:
    why = "NOTOOL not there, use a temp dir"
    await shared.denied_from_the_card(runner, "t-deny", why)
    assert turns(runner, why)  # the model was told, in the person's words


async def test_interrupt_is_cancelled_and_the_next_run_works(runner: ScriptedRunner) -> None:
    first = "NOTOOL first of the cancel thread"
    await shared.cancelled_then_next(runner, "t-cancel", first, "NOTOOL continue the cancel thread")
    assert first in user_texts(turns(runner, "NOTOOL continue the cancel")[-1])  # the session kept


async def test_model_switches_by_the_model_call_and_by_a_runs_model(runner: ScriptedRunner) -> None:
    await shared.switched_runs(runner, "t-model", "claude-sonnet-5-5", "claude-haiku-5-5")
    models = [next(b for b in turns(runner, prompt) if user_texts(b)[-1].startswith(prompt))["model"]
              for prompt in shared.SWITCH_PROMPTS]
    assert models == ["claude-haiku-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"]
    (session,) = [s for s in bridge_of(runner).live.sessions.values()
                  if s.id == bridge_of(runner).sessions.get("t-model")]
    assert session.model_option == "model"  # set through session/set_config_option (set_model answers -32601)


async def test_the_model_key_stays_in_the_runner(runner: ScriptedRunner) -> None:
    await shared.key_stays_in_the_runner(runner, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                                  lambda headers: headers.get("x-api-key"))


async def test_capabilities_name_the_agent_and_what_it_reports(runner: ScriptedRunner) -> None:
    package = "@agentclientprotocol/claude-agent-acp"
    caps, agent = await shared.reported_agent(runner, "claude-agent-acp", package)
    assert agent["name"] == package
    assert {"default", "acceptEdits", "plan", "bypassPermissions"} <= set(agent["modes"])
    assert "auto" not in agent["modes"]  # its own classifier's mode is turned off
    assert set(MODELS.split(",")) <= set(agent["models"])  # the deployment's, and Claude Code's own "default"
    assert caps["reasoning"]["supported"] is True


@pytest.mark.slow
async def test_a_restart_on_the_same_state_dir_continues_the_thread(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    again = await shared.restarted(tmp_path, monkeypatch, CLAUDE)
    assert tuple(user_texts(turns(again, shared.RESTART_PROMPTS[1])[-1])[-2:]) == shared.RESTART_PROMPTS


async def test_runner_scripted_model_runs_it_on_the_offline_anthropic_server(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_scripted_model=True, **CLAUDE) as offline:
        events = await offline.harness.run("t-offline", "NOTOOL hello")
        server = bridge_of(offline).scripted
    assert isinstance(server, AnthropicScriptedServer) and server.requests
    assert not offline.server.requests  # the configured endpoint was not used
    assert texts(events) == PLAIN


async def test_a_repositorys_claude_settings_are_never_read(runner: ScriptedRunner) -> None:
    """Its .claude/settings.json would allow every command without asking and move the model traffic elsewhere."""
    interrupt = await shared.asked_despite_repository_settings(runner, ".claude", {
        "permissions": {"allow": ["Bash"]}, "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}})
    assert interrupt["metadata"]["toolName"] == "Bash"  # still asked, through the proxy to the scripted model


async def test_the_runners_mcp_server_answers_its_tool_call(runner: ScriptedRunner) -> None:
    await shared.mcp_tool_answered(runner, "t-mcp")


async def test_a_message_while_a_run_streams_is_queued_and_runs_next(runner: ScriptedRunner) -> None:
    await shared.queued_while_streaming(runner, "t-queue")
    first, then = shared.QUEUE_PROMPTS
    assert user_texts(turns(runner, then)[0])[-2:] == [first, then]  # the same session, one turn after the other


async def test_images_reach_the_model_as_anthropic_image_blocks(runner: ScriptedRunner) -> None:
    await shared.images_reach_the_model(runner, "t-images", "source")


async def test_interrupt_during_a_shell_command_ends_it(runner: ScriptedRunner) -> None:
    mid = await shared.interrupted_mid_command(runner, "t-sleep")
    call = next(e for e in mid.interrupted if e["type"] == "TOOL_CALL_START")
    assert call["toolCallName"] == "Bash"
    # its model is told, with the next prompt, that the call was stopped while it ran
    (request,) = turns(runner, shared.AFTER_THE_LONG_COMMAND)
    (result,) = [p for m in request["messages"] if m["role"] == "user" and isinstance(m["content"], list)
                 for p in m["content"] if p.get("type") == "tool_result" and p["tool_use_id"] == call["toolCallId"]]
    assert result["is_error"] and "stopped while running" in json.dumps(result)


async def test_the_agent_killed_mid_turn_is_an_error_and_the_next_run_continues(runner: ScriptedRunner) -> None:
    """Last in the module: the module's agent is killed (the tests after it would start on a new one)."""
    await shared.killed_mid_turn_then_next(runner, "t-kill")
    assert user_texts(turns(runner, shared.KILL_PROMPTS[1])[0])[0] == shared.KILL_PROMPTS[0]  # loaded
