"""The shared block tracker on its own: what it opens, what it closes and in which order, how a run ends."""

from __future__ import annotations

from ag_ui.core import RunFinishedEvent
from events import finished, run_error, text, tool, wire_all

from ag_ui_cli_common import BlockTracker, ErrorCode, Failure


def test_whole_blocks_and_ids() -> None:
    blocks = BlockTracker()
    first, second = blocks.next_message_id("r"), blocks.next_message_id("r")
    events = [*blocks.text(first, "Hel"), *blocks.text(first, "lo"), *blocks.close(first), *blocks.close(first),
              *blocks.tool_call("c1", "shell", '{"a": 1}'),
              *blocks.tool_call("c1", "shell", "{}"),  # a call starts once
              *blocks.tool_result("c1", "out")]
    assert (first, second) == ("msg-r-1", "msg-r-2")
    assert wire_all(events) == [*text("msg-r-1", "Hel", "lo"), *tool("c1", "shell", {"a": 1}, "out")]
    assert blocks.has_result("c1") and not blocks.awaiting_result("c1") and blocks.open_calls() == []


def test_close_all_closes_text_then_reasoning_then_tools_and_fail_ends_with_the_error() -> None:
    blocks = BlockTracker(result_suffix=":result")
    marks = {"metadata": {"parentToolCallId": "task"}}
    opened = [*blocks.start_tool("c1", "web_search", fallback_args='{"query": ""}'),
              *blocks.reasoning("r1", "hm", marks=marks), *blocks.text("m1", "hi")]
    assert blocks.open_calls() == [("c1", "web_search")] and blocks.tool_name("c1") == "web_search"
    ended = blocks.fail(Failure("The CLI failed.", ErrorCode.AGENT_ERROR))
    assert [e["type"] for e in wire_all(opened)] == [
        "TOOL_CALL_START", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert wire_all(ended) == [
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r1", **marks},
        {"type": "REASONING_END", "messageId": "r1", **marks},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"query": ""}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        run_error("AGENT_ERROR", "The CLI failed.")]
    assert blocks.terminal is ended[-1] and blocks.close_all() == []


def test_streamed_arguments_signature_and_a_result_for_an_open_call() -> None:
    blocks = BlockTracker()
    events = [*blocks.start_tool("c1", "Bash"), *blocks.tool_args("c1", '{"command": "ls"}'),
              *blocks.tool_result("c1", "a.txt"),  # still open: closed first, no fallback arguments
              *blocks.reasoning("r1", "think"), *blocks.end_reasoning("r1", "sig"),
              *blocks.finish(RunFinishedEvent(thread_id="thread-1", run_id="run-1"))]
    assert wire_all(events) == [
        *tool("c1", "Bash", {"command": "ls"}, "a.txt"),
        {"type": "REASONING_START", "messageId": "r1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "think"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r1"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "r1", "encryptedValue": "sig"},
        {"type": "REASONING_END", "messageId": "r1"},
        finished()]


def test_a_call_streamed_elsewhere_is_not_started_again() -> None:
    blocks = BlockTracker()
    blocks.note_started("c1")
    assert blocks.has_started("c1") and blocks.start_tool("c1", "Bash") == [] and blocks.tool_args("c1", "{}") == []
    assert wire_all(blocks.tool_result("c1", "ok")) == [
        {"type": "TOOL_CALL_RESULT", "messageId": "c1-result", "toolCallId": "c1", "content": "ok", "role": "tool"}]


def test_segments_of_a_cli_that_names_no_messages_and_prefixed_ids() -> None:
    blocks = BlockTracker()
    assert blocks.close_segment() == [] and blocks.last_segment_id is None
    events = [*blocks.segment("r", "Hel"), *blocks.segment("r", "lo")]
    reasoning_id = blocks.next_message_id("r", "reasoning")  # one count for every prefix
    events += [*blocks.close_segment(), *blocks.close_segment(),
               *blocks.tool_call("c1", "shell", "{}", parent_message_id=blocks.last_segment_id),
               *blocks.segment("r", "Done.")]
    assert reasoning_id == "reasoning-r-2" and blocks.last_segment_id == "msg-r-3"
    events += blocks.finish(RunFinishedEvent(thread_id="thread-1", run_id="run-1"))  # closes the open segment
    events += blocks.segment("r", "again")  # the closed segment is not reopened
    assert wire_all(events) == [
        *text("msg-r-1", "Hel", "lo"), *tool("c1", "shell", {}, parentMessageId="msg-r-1"),
        *text("msg-r-3", "Done."), finished(),
        *text("msg-r-4", "again")[:2]]
