"""The wire format, pinned: what the runner writes for one event of every event class of ``ag_ui.core``, as literal
JSON. A dependency that changes it (ag-ui's field names or omissions, pydantic's JSON) fails this test instead of
changing the stream silently, and so does a new event class nobody pinned. Each event is written twice: the first
of its class as pydantic writes it (``model_dump_json(by_alias=True, exclude_none=True)``, the wire format's
definition), the next on the direct path (``ambient_runner.stream.encoding``); both must be the pinned text."""

from __future__ import annotations

import inspect

import ag_ui.core
import pytest
from ag_ui.core import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    MessagesSnapshotEvent,
    RawEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)

from ambient_runner.stream import encoding
from ambient_runner.stream.encoding import Redactor, event_json

PINNED = [
    (RunStartedEvent(thread_id="t", run_id="r", protocol_version="1.0"),
     '{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}'),
    (TextMessageStartEvent(message_id="m", role="assistant", metadata={"parentToolCallId": "c0"}),
     '{"type":"TEXT_MESSAGE_START","metadata":{"parentToolCallId":"c0"},"messageId":"m","role":"assistant"}'),
    (TextMessageContentEvent(message_id="m", delta="h\u00e9llo \"x\"\n", subagent_run_id="sa"),
     '{"type":"TEXT_MESSAGE_CONTENT","subagentRunId":"sa","messageId":"m","delta":"h\u00e9llo \\"x\\"\\n"}'),
    (ToolCallStartEvent(tool_call_id="c1", tool_call_name="Bash", parent_message_id="m"),
     '{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"Bash","parentMessageId":"m"}'),
    (ToolCallArgsEvent(tool_call_id="c1", delta='{"command": "ls"}'),
     '{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\\"command\\": \\"ls\\"}"}'),
    (ToolCallResultEvent(message_id="r1", tool_call_id="c1", content="ok", role="tool"),
     '{"type":"TOOL_CALL_RESULT","messageId":"r1","toolCallId":"c1","content":"ok","role":"tool"}'),
    (StateDeltaEvent(delta=[{"op": "add", "path": "/plan", "value": {"steps": []}}]),
     '{"type":"STATE_DELTA","delta":[{"op":"add","path":"/plan","value":{"steps":[]}}]}'),
    (ReasoningEncryptedValueEvent(subtype="message", entity_id="th", encrypted_value="sig"),
     '{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"th","encryptedValue":"sig"}'),
    (SubagentStartedEvent(subagent_run_id="sa", name="general-purpose", parent_tool_call_id="c1"),
     '{"type":"SUBAGENT_STARTED","subagentRunId":"sa","name":"general-purpose","parentToolCallId":"c1"}'),
    (SubagentFinishedEvent(subagent_run_id="sa", result="done"),
     '{"type":"SUBAGENT_FINISHED","subagentRunId":"sa","result":"done"}'),
    (SubagentErrorEvent(subagent_run_id="sb", message="failed", code="SUBAGENT_FAILED"),
     '{"type":"SUBAGENT_ERROR","subagentRunId":"sb","message":"failed","code":"SUBAGENT_FAILED"}'),
    (RawEvent(event={"type": "langfuse_trace", "traceId": "ab"}, source="ambient-runner/tracing"),
     '{"type":"RAW","event":{"type":"langfuse_trace","traceId":"ab"},"source":"ambient-runner/tracing"}'),
    (MessagesSnapshotEvent(messages=[
        UserMessage(id="u", role="user", content="hi"),
        AssistantMessage(id="a", role="assistant", content="sure", tool_calls=[
            ToolCall(id="c1", type="function", function=FunctionCall(name="Bash", arguments="{}"))])]),
     '{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":"hi"},{"id":"a","role":"assistant",'
     '"content":"sure","toolCalls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{}"}}]}]}'),
    (RunFinishedEvent(thread_id="t", run_id="r", outcome=RunFinishedCancelledOutcome(), usage=[
        TokenUsage(provider="anthropic", model="m", input_tokens=3, output_tokens=2, total_tokens=5)]),
     '{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":[{"provider":'
     '"anthropic","model":"m","inputTokens":3,"outputTokens":2,"totalTokens":5}]}'),
    (RunErrorEvent(message="The CLI crashed.", code="CLI_EXITED"),
     '{"type":"RUN_ERROR","message":"The CLI crashed.","code":"CLI_EXITED"}'),
    (TextMessageEndEvent(message_id="m", timestamp=1767225600000),
     '{"type":"TEXT_MESSAGE_END","timestamp":1767225600000,"messageId":"m"}'),
    (TextMessageChunkEvent(message_id="m", role="assistant", delta="Hi"),
     '{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","role":"assistant","delta":"Hi"}'),
    (ToolCallEndEvent(tool_call_id="c1", subagent_run_id="sa"),
     '{"type":"TOOL_CALL_END","subagentRunId":"sa","toolCallId":"c1"}'),
    (ToolCallChunkEvent(tool_call_id="c1", tool_call_name="Read", parent_message_id="m", delta='{"path": "a.py"}'),
     '{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"Read","parentMessageId":"m",'
     '"delta":"{\\"path\\": \\"a.py\\"}"}'),
    (StateSnapshotEvent(snapshot={"plan": {"steps": [{"title": "read", "done": True}]}, "mode": None}),
     '{"type":"STATE_SNAPSHOT","snapshot":{"plan":{"steps":[{"title":"read","done":true}]},"mode":null}}'),
    (ActivitySnapshotEvent(message_id="act", activity_type="PLAN", content={"steps": ["read", "edit"]},
                           replace=False),
     '{"type":"ACTIVITY_SNAPSHOT","messageId":"act","activityType":"PLAN","content":{"steps":["read","edit"]},'
     '"replace":false}'),
    (ActivityDeltaEvent(message_id="act", activity_type="PLAN",
                        patch=[{"op": "replace", "path": "/steps/0", "value": "look"}]),
     '{"type":"ACTIVITY_DELTA","messageId":"act","activityType":"PLAN","patch":[{"op":"replace","path":"/steps/0",'
     '"value":"look"}]}'),
    (CustomEvent(name="ambient.task", value={"taskId": "b1", "status": "running"}),
     '{"type":"CUSTOM","name":"ambient.task","value":{"taskId":"b1","status":"running"}}'),
    (StepStartedEvent(step_name="plan"), '{"type":"STEP_STARTED","stepName":"plan"}'),
    (StepFinishedEvent(step_name="plan"), '{"type":"STEP_FINISHED","stepName":"plan"}'),
    (ReasoningStartEvent(message_id="th"), '{"type":"REASONING_START","messageId":"th"}'),
    (ReasoningMessageStartEvent(message_id="th", role="reasoning"),
     '{"type":"REASONING_MESSAGE_START","messageId":"th","role":"reasoning"}'),
    (ReasoningMessageContentEvent(message_id="th", delta="Let me look"),
     '{"type":"REASONING_MESSAGE_CONTENT","messageId":"th","delta":"Let me look"}'),
    (ReasoningMessageEndEvent(message_id="th"), '{"type":"REASONING_MESSAGE_END","messageId":"th"}'),
    (ReasoningMessageChunkEvent(message_id="th", delta="more"),
     '{"type":"REASONING_MESSAGE_CHUNK","messageId":"th","delta":"more"}'),
    (ReasoningEndEvent(message_id="th"), '{"type":"REASONING_END","messageId":"th"}'),
]
EVENT_CLASSES = {kind for kind in vars(ag_ui.core).values()
                 if inspect.isclass(kind) and issubclass(kind, BaseEvent) and kind is not BaseEvent}


def test_every_event_class_of_ag_ui_core_is_pinned() -> None:
    assert len(EVENT_CLASSES) >= 31
    assert EVENT_CLASSES - {type(event) for event, _ in PINNED} == set()


@pytest.mark.parametrize(("event", "wire"), PINNED, ids=[e.type for e, _ in PINNED])
def test_the_wire_format_is_pinned(event, wire, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoding, "_agrees", {})  # this class's first event: written by pydantic, and compared
    first = event_json(event, Redactor(()))
    second = event_json(event.model_copy(), Redactor(()))  # the direct path, once the class agreed
    assert encoding._agrees.get(type(event)) is True
    assert first == wire and second == wire
