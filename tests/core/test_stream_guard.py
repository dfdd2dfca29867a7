"""StreamGuard on its own: whole event lists in, whole event lists out."""

from __future__ import annotations

from ag_ui.core import (
    Interrupt,
    ReasoningMessageContentEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from events import wire_all
from harness import check_stream

from ambient_runner.stream.encoding import Redactor, event_json
from ambient_runner.stream.guard import Ending, StreamGuard, ThreadIds


def drive(bridge_events, ending=None, stopping=None, ids=None) -> list[dict]:
    guard = StreamGuard("t", "r", ids or ThreadIds())
    out = [guard.started()]
    for event in bridge_events:
        out += guard.accept(event, stopping=stopping)
    out += guard.finish(ending or Ending())
    events = wire_all(out)
    check_stream(events)
    return events


def test_open_blocks_are_closed_before_an_error():
    events = drive([
        ReasoningStartEvent(message_id="think"),
        ReasoningMessageContentEvent(message_id="think", delta="hmm"),
        TextMessageContentEvent(message_id="m1", delta="partial"),
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="shell"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"command": "ec'),
        StepStartedEvent(step_name="edit"),
    ], Ending(error_message="The CLI crashed.", error_code="CLI_EXITED"))
    assert events == [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": "1.0"},
        {"type": "REASONING_START", "messageId": "think"},
        {"type": "REASONING_MESSAGE_START", "messageId": "think", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "think", "delta": "hmm"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "partial"},
        # the text ends before the call: the platform's page holds a call only on a text it has committed
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "shell", "parentMessageId": "m1"},
        {"type": "STEP_STARTED", "stepName": "edit"},
        # closed in the one order (ag_ui_cli_common.blocks.CLOSE_ORDER): text, reasoning, then tool calls
        {"type": "REASONING_MESSAGE_END", "messageId": "think"},
        {"type": "REASONING_END", "messageId": "think"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"_raw": "{\\"command\\": \\"ec"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "STEP_FINISHED", "stepName": "edit"},
        {"type": "RUN_ERROR", "message": "The CLI crashed.", "code": "CLI_EXITED"},
    ]


def test_tool_arguments_are_buffered_into_one_valid_delta():
    events = drive([
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="shell"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"command": '),
        ToolCallArgsEvent(tool_call_id="c1", delta='"ls"}'),
        ToolCallEndEvent(tool_call_id="c1"),
        ToolCallResultEvent(message_id="res", tool_call_id="c1", content="a.txt"),
    ])
    assert events[1:-1] == [  # nothing said before it: a holder of its own, named after it and announced first
        {"type": "RAW", "event": {"id": "c1-call", "role": "assistant", "content": []},
         "source": "ambient-runner/tool-call-holder"},  # (see _holder_of: the platform's page makes it a message)
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "shell", "parentMessageId": "c1-call"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"command": "ls"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "res", "toolCallId": "c1", "content": "a.txt"},
    ]


def test_bridge_terminal_event_is_kept_with_usage_and_nothing_follows():
    usage = TokenUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    events = drive([
        RunStartedEvent(thread_id="x", run_id="y"),
        TextMessageStartEvent(message_id="m", role="assistant"),
        TextMessageContentEvent(message_id="m", delta="hi"),
        RunFinishedEvent(thread_id="x", run_id="y", usage=[usage], result={"costUsd": 0.01}),
        TextMessageContentEvent(message_id="late", delta="after the end"),
        RunErrorEvent(message="also late"),
    ])
    assert [e["type"] for e in events] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                           "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": {"costUsd": 0.01},
                          "usage": [{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}]}


def test_an_error_after_an_interrupt_becomes_the_cancelled_outcome():
    events = drive([TextMessageContentEvent(message_id="m", delta="stopping"),
                    RunErrorEvent(message="error_during_execution: aborted")],
                   stopping=Ending(cancelled=True))
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}}


def test_empty_deltas_duplicate_starts_and_stray_ends_are_dropped():
    events = drive([
        TextMessageStartEvent(message_id="m", role="assistant"),
        TextMessageStartEvent(message_id="m", role="assistant"),
        TextMessageContentEvent.model_construct(message_id="m", delta=""),
        TextMessageEndEvent(message_id="m"),
        TextMessageEndEvent(message_id="m"),
        ToolCallEndEvent(tool_call_id="never-started"),
    ])
    assert [e["type"] for e in events] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_FINISHED"]


def test_ids_reused_in_a_later_run_are_remapped_consistently():
    ids = ThreadIds()
    drive([TextMessageContentEvent(message_id="msg_1", delta="one")], ids=ids)
    second = drive([TextMessageStartEvent(message_id="msg_1", role="assistant"),
                    TextMessageContentEvent(message_id="msg_1", delta="two"),
                    TextMessageEndEvent(message_id="msg_1")], ids=ids)
    assert {e.get("messageId") for e in second[1:-1]} == {"msg_1~2"}


def test_secrets_are_redacted_from_the_wire_json():
    redact = Redactor(["sk-test-secret-1", 'quote"d-secret'])
    text = event_json(RunErrorEvent(message='bad key sk-test-secret-1 and quote"d-secret'), redact)
    assert text == '{"type":"RUN_ERROR","message":"bad key [REDACTED] and [REDACTED]"}'


def sub_agent_work(run: str = "sa1") -> list:
    mark = {"subagent_run_id": run, "metadata": {"parentToolCallId": "agent-call"}}
    return [
        ToolCallStartEvent(tool_call_id="agent-call", tool_call_name="Agent"),
        ToolCallEndEvent(tool_call_id="agent-call"),
        SubagentStartedEvent(subagent_run_id=run, name="general-purpose", parent_tool_call_id="agent-call"),
        SubagentStartedEvent(subagent_run_id=run, name="general-purpose"),  # a repeat: dropped
        TextMessageContentEvent(message_id="sub-text", delta="looking", **mark),
        ToolCallStartEvent(tool_call_id="sub-call", tool_call_name="Bash", **mark),
        ToolCallArgsEvent(tool_call_id="sub-call", delta='{"command": "ls"}', **mark),
    ]


def test_an_open_sub_agent_ends_with_the_run_and_keeps_its_marks():
    mark = {"subagentRunId": "sa1", "metadata": {"parentToolCallId": "agent-call"}}
    events = drive(sub_agent_work(), Ending(error_message="The CLI crashed.", error_code="CLI_EXITED"))
    assert events[1:] == [
        {"type": "RAW", "event": {"id": "agent-call-call", "role": "assistant", "content": []},
         "source": "ambient-runner/tool-call-holder"},
        {"type": "TOOL_CALL_START", "toolCallId": "agent-call", "toolCallName": "Agent",
         "parentMessageId": "agent-call-call"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "agent-call", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "agent-call"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "sa1", "name": "general-purpose",
         "parentToolCallId": "agent-call"},
        {"type": "TEXT_MESSAGE_START", "messageId": "sub-text", "role": "assistant", **mark},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "sub-text", "delta": "looking", **mark},
        {"type": "TOOL_CALL_START", "toolCallId": "sub-call", "toolCallName": "Bash", **mark},
        # written by the guard to close what the crash left open (text first): still the sub-agent's
        {"type": "TEXT_MESSAGE_END", "messageId": "sub-text", **mark},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "sub-call", "delta": '{"command": "ls"}', **mark},
        {"type": "TOOL_CALL_END", "toolCallId": "sub-call", **mark},
        {"type": "SUBAGENT_ERROR", "subagentRunId": "sa1", "message": "the run ended before the sub-agent finished",
         "code": "RUN_ENDED"},
        {"type": "RUN_ERROR", "message": "The CLI crashed.", "code": "CLI_EXITED"},
    ]


def test_a_sub_agent_ends_once_and_an_unknown_end_is_dropped():
    events = drive([*sub_agent_work(), ToolCallEndEvent(tool_call_id="sub-call"),
                    TextMessageEndEvent(message_id="sub-text"),
                    SubagentFinishedEvent(subagent_run_id="sa1", result="done"),
                    SubagentFinishedEvent(subagent_run_id="sa1"), SubagentErrorEvent(subagent_run_id="nope",
                                                                                     message="x"),
                    SubagentStartedEvent(subagent_run_id="sa1", name="again")])  # an ended segment never reopens
    ends = [e for e in events if e["type"] in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR")]
    assert ends == [{"type": "SUBAGENT_FINISHED", "subagentRunId": "sa1", "result": "done"}]
    assert [e["type"] for e in events].count("SUBAGENT_STARTED") == 1
    assert events[-1]["type"] == "RUN_FINISHED"


def test_a_sub_agent_still_open_at_a_clean_end_is_finished():
    events = drive(sub_agent_work()[:3])
    assert [e["type"] for e in events[-2:]] == ["SUBAGENT_FINISHED", "RUN_FINISHED"]


def test_a_sub_agent_waiting_for_a_person_is_suspended_then_announced_again():
    ids = ThreadIds()
    waiting = Interrupt(id="int-1", reason="tool_approval", tool_call_id="sub-call")
    first = drive([*sub_agent_work(), RunFinishedEvent(thread_id="t", run_id="r", outcome=RunFinishedInterruptOutcome(
        interrupts=[waiting]))], ids=ids)
    assert first[-2:] == [
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "sa1", "outcome": {"type": "suspended",
                                                                          "interruptIds": ["int-1"]}},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt", "interrupts": [
            {"id": "int-1", "reason": "tool_approval", "toolCallId": "sub-call", "subagentRunId": "sa1"}]}}]
    guard = StreamGuard("t", "r2", ids)  # the next run, which answered it
    mark = {"subagent_run_id": "sa1"}
    events = wire_all([e for event in [ToolCallResultEvent(message_id="res", tool_call_id="sub-call", content="ok",
                                                       **mark),
                                   SubagentFinishedEvent(subagent_run_id="sa1")]
                   for e in guard.accept(event)])
    assert [(e["type"], e.get("subagentRunId")) for e in events] == [
        ("SUBAGENT_STARTED", "sa1"), ("TOOL_CALL_RESULT", "sa1"), ("SUBAGENT_FINISHED", "sa1")]
    assert events[0]["parentToolCallId"] == "agent-call" and events[0]["name"] == "general-purpose"
