"""RUNNER_TYPE=acp with ACP_AGENT=codex-acp, end to end: the real ``codex-acp`` (with its own Codex, one live process
for the pod) on the scripted OpenAI Responses server, through the model proxy (a custom provider in its
config.toml), the real service over HTTP/SSE (every stream through ``check_stream`` and ag-ui-validate), inside the
loopback-only network namespace. One runner serves the module's threads (each test its own thread); a restart has
runners of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp_agent_tests as shared
import pytest
from acp_agent_tests import module_patch, scripted_as_it_was
from runners import ScriptedRunner

from ambient_runner.scripted_models.base import ScriptedModelServer

pytestmark = shared.PRESET_MARKS
MODELS = "gpt-5.5,gpt-6-sol"  # in its Codex's own catalog (it switches only between those)
CODEX = shared.preset_settings("codex-acp", MODELS)
runner = shared.module_runner("codex", CODEX)
__all__ = ["module_patch", "scripted_as_it_was"]  # fixtures the module uses
PATCH = "PATCH add the file"  # the scripted model's apply_patch: adds hello.txt
PATCHED = shared.Asked(PATCH, "hello.txt", "hello from patch\n", "change a file", "")


def turns(server: ScriptedModelServer, word: str) -> list[Any]:
    """The agent's model requests that hold ``word``, in order."""
    return [r for r in server.requests if r.path.endswith("/responses") and word in json.dumps(r.body)]


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user's words in a Responses request (not Codex's own context blocks)."""
    found = []
    for item in body.get("input") or []:
        if item.get("type", "message") == "message" and item.get("role") == "user":
            content = item["content"]
            parts = [{"text": content}] if isinstance(content, str) else content
            found += [p["text"] for p in parts if p.get("text") and not p["text"].startswith("<")]
    return found


async def test_a_tool_call_creates_a_file_and_the_next_turn_continues(runner: ScriptedRunner) -> None:
    runner.server.shell_command = "echo made-by-codex > created.txt && echo the-output"
    turn = await shared.tool_turn_then_next(runner, "t-tool", "make the file, says tangerine", "NOTOOL and now?")
    assert turn.start["toolCallName"] == "exec_command"
    assert turn.arguments["command"] == "echo made-by-codex > created.txt && echo the-output"
    assert "the-output" in turn.result["content"]  # from its terminal output
    assert (runner.settings.workspace_path / "created.txt").read_text() == "made-by-codex\n"
    (usage,) = turn.events[-1]["usage"]  # the prompt result's: its two model requests
    assert usage["provider"] == "openai" and usage["model"] == "gpt-5.5" and usage["inputTokens"] > 0
    assert user_texts(turns(runner.server, "NOTOOL and now?")[-1].body)[-2:] == ["make the file, says tangerine",
                                                                                "NOTOOL and now?"]
    assert {r.body.get("model") for r in runner.server.requests} == {"gpt-5.5"}  # no title model of its own


async def test_an_apply_patch_call_shows_its_diff(runner: ScriptedRunner) -> None:
    events = await runner.harness.run("t-patch", PATCH)
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    arguments = json.loads(next(e for e in events if e["type"] == "TOOL_CALL_ARGS")["delta"])
    assert arguments["newText"] == "hello from patch\n" and arguments["path"].endswith("hello.txt")
    assert any(e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == start["toolCallId"] for e in events)
    assert (runner.settings.workspace_path / "hello.txt").read_text() == "hello from patch\n"
    (runner.settings.workspace_path / "hello.txt").unlink()


async def test_thoughts_and_plans(runner: ScriptedRunner) -> None:
    events = await runner.harness.run("t-think", "THINK NOTOOL hello")
    assert [e for e in events if e["type"] == "REASONING_MESSAGE_START"] and shared.texts(events) == shared.PLAIN


async def test_the_cards_approve_runs_the_edit_once(runner: ScriptedRunner) -> None:
    """Under ``ask`` (its read-only mode) an edit asks; Approve applies it once."""
    await shared.approved_from_the_card(runner, "t-approve", None, "Codex", PATCHED)
    (runner.settings.workspace_path / PATCHED.made).unlink()


async def test_a_deny_from_the_card_never_runs_and_the_persons_words_reach_the_model(runner: ScriptedRunner) -> None:
    """Codex ends its turn ``cancelled`` on a refusal: the run still ends as a refused step, not as an interrupt."""
    why = "NOTOOL not there, put it elsewhere"
    denied = await shared.denied_from_the_card(runner, "t-deny", why, PATCHED)
    assert denied[-1]["type"] == "RUN_FINISHED" and denied[-1].get("outcome", {}).get("type") != "cancelled"
    assert turns(runner.server, why)  # the model was told, in the person's words


async def test_interrupt_is_cancelled_and_the_next_run_works(runner: ScriptedRunner) -> None:
    first = "NOTOOL first of the cancel thread"
    await shared.cancelled_then_next(runner, "t-cancel", first, "NOTOOL continue the cancel thread")
    assert first in user_texts(turns(runner.server, "NOTOOL continue the cancel")[-1].body)  # the session kept


async def test_interrupt_during_a_shell_command_ends_it(runner: ScriptedRunner) -> None:
    """Codex runs each command in a session of its own and leaves it running on session/cancel: the runner ends
    it, and nothing after it runs."""
    mid = await shared.interrupted_mid_command(runner, "t-sleep")
    call = next(e for e in mid.interrupted if e["type"] == "TOOL_CALL_START")
    assert call["toolCallName"] == "exec_command"
    # its model is told, with the next prompt, that the command was aborted
    (request,) = turns(runner.server, shared.AFTER_THE_LONG_COMMAND)
    outputs = [i["output"] for i in request.body["input"] if i.get("type") == "function_call_output"]
    assert [o for o in outputs if "aborted by user" in str(o)], outputs


async def test_model_switches_by_the_model_call_and_by_a_runs_model(runner: ScriptedRunner) -> None:
    await shared.switched_runs(runner, "t-model", "gpt-5.5", "gpt-6-sol")
    models = [turns(runner.server, prompt)[0].body["model"] for prompt in shared.SWITCH_PROMPTS]  # each turn's own
    assert models == ["gpt-6-sol", "gpt-5.5", "gpt-6-sol"]


async def test_the_model_key_stays_in_the_runner(runner: ScriptedRunner) -> None:
    await shared.key_stays_in_the_runner(runner, "CODEX_API_KEY", None,
                                  lambda headers: (headers.get("authorization") or "").removeprefix("Bearer "))
    codex_home = runner.settings.state_dir / "home" / ".codex"
    proxy = shared.bridge_of(runner).model_proxy
    assert proxy is not None and f'base_url = "{proxy.base_url}/v1"' in (codex_home / "config.toml").read_text()
    assert 'env_key = "CODEX_API_KEY"' in (codex_home / "config.toml").read_text()
    assert not (codex_home / "auth.json").exists()  # never authenticated


async def test_capabilities_name_the_agent_and_what_it_reports(runner: ScriptedRunner) -> None:
    caps, agent = await shared.reported_agent(runner, "codex-acp", "@agentclientprotocol/codex-acp")
    assert {"read-only", "agent-full-access"} <= set(agent["modes"])
    assert set(MODELS.split(",")) <= set(agent["models"])  # its own catalog's ids
    (policy,) = [o for o in caps["custom"]["options"] if o["name"] == "approvalPolicy"]
    assert "need more than Codex's read-only sandbox" in policy["description"]  # what ask does, no more


@pytest.mark.slow
async def test_a_restart_on_the_same_state_dir_continues_the_thread(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    again = await shared.restarted(tmp_path, monkeypatch, CODEX)
    assert tuple(user_texts(turns(again.server, shared.RESTART_PROMPTS[1])[-1].body)[-2:]) == shared.RESTART_PROMPTS


async def test_the_runners_mcp_server_answers_its_tool_call(runner: ScriptedRunner) -> None:
    await shared.mcp_tool_answered(runner, "t-mcp")


async def test_a_message_while_a_run_streams_is_queued_and_runs_next(runner: ScriptedRunner) -> None:
    """Queued, not steered: it offers mid-turn steering (``_session/steering``), which the runner does not use."""
    await shared.queued_while_streaming(runner, "t-queue")
    first, then = shared.QUEUE_PROMPTS
    assert user_texts(turns(runner.server, then)[0].body)[-2:] == [first, then]  # the same session, in turn


async def test_images_reach_the_model_as_responses_input_images(runner: ScriptedRunner) -> None:
    await shared.images_reach_the_model(runner, "t-images", "input_image")


async def test_the_agent_killed_mid_turn_is_an_error_and_the_next_run_continues(runner: ScriptedRunner) -> None:
    """Last in the module: the module's agent is killed (the tests after it would start on a new one). Its thread
    continues through ``session/resume``, as after a restart."""
    await shared.killed_mid_turn_then_next(runner, "t-kill")
    assert shared.bridge_of(runner).live.reopens[0] == "session/resume"  # how the new agent took the session up
    assert user_texts(turns(runner.server, shared.KILL_PROMPTS[1])[0].body)[0] == shared.KILL_PROMPTS[0]  # resumed
