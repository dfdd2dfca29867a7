"""The platform's page (tests/support/platform_page.py) shows a run the same live and after a reload, whatever shape
a runner streams it in: the shapes of issue 30 (Codex's tool call right after its reasoning with no text before it,
Gemini's blank shell result, Claude's thinking, text and calls), streamed by a scripted CLI through the real
service (StreamGuard and the MESSAGES_SNAPSHOT are the core's, the same for every runner)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import RunnerHarness
from page_session import PageSession
from process_bridge import FakeCliBridge, script


def emit(**event: Any) -> dict[str, Any]:
    return {"emit": event}


def reasoning(message_id: str, content: str) -> list[dict[str, Any]]:
    return [emit(type="REASONING_START", messageId=message_id),
            emit(type="REASONING_MESSAGE_START", messageId=message_id, role="reasoning"),
            emit(type="REASONING_MESSAGE_CONTENT", messageId=message_id, delta=content),
            emit(type="REASONING_MESSAGE_END", messageId=message_id), emit(type="REASONING_END", messageId=message_id)]


def said(message_id: str, content: str, *, end: bool = True) -> list[dict[str, Any]]:
    return [emit(type="TEXT_MESSAGE_START", messageId=message_id, role="assistant"),
            emit(type="TEXT_MESSAGE_CONTENT", messageId=message_id, delta=content),
            *([emit(type="TEXT_MESSAGE_END", messageId=message_id)] if end else [])]


def called(call_id: str, name: str, args: dict[str, Any], result: str, parent: str | None = None) -> list[dict]:
    start = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}
    if parent:
        start["parentMessageId"] = parent
    return [emit(**start), emit(type="TOOL_CALL_ARGS", toolCallId=call_id, delta=json.dumps(args)),
            emit(type="TOOL_CALL_END", toolCallId=call_id),
            emit(type="TOOL_CALL_RESULT", messageId=f"{call_id}-out", toolCallId=call_id, content=result)]


CODEX_TURN = [*reasoning("rs_resp_1", "I should list the files."),
              *called("call_resp_1", "shell", {"command": "ls"}, "README.md"),
              *called("call_resp_2", "shell", {"command": "wc -l README.md"}, "3 README.md"),
              *said("msg_resp_1", "There is a README of 3 lines.")]
GEMINI_TURN = [*said("msg-r-1", "Creating the file."),
               *called("run_shell_command-1", "run_shell_command", {"command": "touch out.txt"}, "",
                       parent="msg-r-1"),
               *said("msg-r-2", "Done.")]
CLAUDE_TURN = [*reasoning("think-1", "The user wants a file."),
               *said("msg_1", "I'll create it.", end=False),  # text still open when its call starts
               *called("toolu_1", "Bash", {"command": "echo hi > a.txt"}, "(no output)", parent="msg_1"),
               *reasoning("think-2", "Now report."),
               *called("toolu_2", "Read", {"file_path": "a.txt"}, "hi"),
               *said("msg_2", "Created a.txt.")]
INTERLEAVED_TURN = [*said("m-1", "Two at once."),  # calls whose ends come in another order than their starts
                    emit(type="TOOL_CALL_START", toolCallId="p1", toolCallName="Read"),
                    emit(type="TOOL_CALL_START", toolCallId="p2", toolCallName="Grep"),
                    emit(type="TOOL_CALL_ARGS", toolCallId="p2", delta='{"pattern": "x"}'),
                    emit(type="TOOL_CALL_END", toolCallId="p2"),
                    emit(type="TOOL_CALL_ARGS", toolCallId="p1", delta='{"file_path": "a"}'),
                    emit(type="TOOL_CALL_END", toolCallId="p1"),
                    emit(type="TOOL_CALL_RESULT", messageId="p1-out", toolCallId="p1", content="a"),
                    emit(type="TOOL_CALL_RESULT", messageId="p2-out", toolCallId="p2", content="x")]
SHAPES = {"codex": CODEX_TURN, "gemini": GEMINI_TURN, "claude": CLAUDE_TURN, "interleaved": INTERLEAVED_TURN}


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_live_page_equals_reloaded_page_over_two_turns(shape: str, tmp_path: Any) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        session = PageSession(runner.post, f"t-{shape}")
        await session.say(script(*SHAPES[shape]))
        await session.say(script(*called("second-call", "shell", {"command": "date"}, "today")))  # no text first
    reloaded = session.check_reload()
    cards = reloaded.tool_cards()
    assert cards and not any(card["pending"] for card in cards)
    assert [r["text"] for r in reloaded.rendered() if r["kind"] == "reasoning"] == [
        e["emit"]["delta"] for e in SHAPES[shape] if e["emit"]["type"] == "REASONING_MESSAGE_CONTENT"]


async def test_codex_turn_keeps_its_three_messages_under_the_streamed_ids(tmp_path: Any) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        session = PageSession(runner.post, "t-codex")
        events = await session.say(script(*CODEX_TURN))
    starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert {e["parentMessageId"] for e in starts} == {"call_resp_1-call"}  # named on the wire, held in the snapshot
    snapshot = events[-2]["messages"]
    assert [(m["id"], m["role"]) for m in snapshot[1:]] == [
        ("rs_resp_1", "reasoning"), ("call_resp_1-call", "assistant"), ("call_resp_1-out", "tool"),
        ("call_resp_2-out", "tool"), ("msg_resp_1", "assistant")]
    assert [c["id"] for c in snapshot[2]["toolCalls"]] == ["call_resp_1", "call_resp_2"]
    assert [m["id"] for m in session.check_reload().messages[1:]] == ["rs_resp_1", "call_resp_1-call", "msg_resp_1"]


async def test_a_blank_result_is_sent_as_a_sentence(tmp_path: Any) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        events = await runner.run("t-blank", script(*called("c1", "run_shell_command", {"command": "true"}, "  ")))
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "run_shell_command finished; the CLI reports no output"
    assert events[-2]["messages"][-1]["content"] == result["content"]
