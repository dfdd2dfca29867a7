"""The direct JSON path writes exactly what pydantic writes, for every event it takes; the rest is pydantic's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ag_ui.core import (
    AssistantMessage,
    CustomEvent,
    EventType,
    FunctionCall,
    MessagesSnapshotEvent,
    RawEvent,
    ReasoningMessageContentEvent,
    RunErrorEvent,
    RunFinishedEvent,
    TextMessageContentEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from ag_ui_claude import ClaudeEventAdapter
from ag_ui_cli_common import Exit
from ag_ui_codex_sdk import CodexEventAdapter
from ag_ui_gemini_cli import GeminiCliAdapter
from ambient_runner.stream.encoding import Redactor, event_json, sse_frame

NO_SECRETS = Redactor(())
text = st.text(min_size=1, alphabet=st.characters(blacklist_categories=("Cs",)))


@settings(max_examples=500, deadline=None)
@given(message_id=text, delta=text)
def test_delta_events_match_pydantic(message_id, delta):
    for event in (TextMessageContentEvent(message_id=message_id, delta=delta),
                  ReasoningMessageContentEvent(message_id=message_id, delta=delta),
                  ToolCallArgsEvent(tool_call_id=message_id, delta=delta)):
        assert event_json(event, NO_SECRETS) == event.model_dump_json(by_alias=True, exclude_none=True)


@settings(max_examples=300, deadline=None)
@given(ident=text, name=text, content=text, stamp=st.none() | st.integers(min_value=0, max_value=2**53 - 1),
       code=st.none() | text)
def test_flat_events_match_pydantic(ident, name, content, stamp, code):
    for event in (TextMessageStartEvent(message_id=ident, role="assistant", timestamp=stamp),
                  ToolCallStartEvent(tool_call_id=ident, tool_call_name=name, parent_message_id=code),
                  ToolCallResultEvent(message_id=name, tool_call_id=ident, content=content, role="tool"),
                  RunErrorEvent(message=content, code=code, timestamp=stamp)):
        assert event_json(event, NO_SECRETS) == event.model_dump_json(by_alias=True, exclude_none=True)


# JSON values without floats (pydantic formats floats its own way: those events are pydantic's).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**63) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=20)
counts = st.none() | st.integers(min_value=0, max_value=2**53 - 1)


@settings(max_examples=300, deadline=None)
@given(value=json_values, ident=text, tokens=st.lists(st.tuples(text, counts, counts), max_size=3))
def test_nested_values_and_models_match_pydantic(value, ident, tokens):
    usage = [TokenUsage(provider="p", model=m, input_tokens=i, output_tokens=o) for m, i, o in tokens] or None
    message = AssistantMessage(id=ident, content=None if value is None else ident, tool_calls=[
        ToolCall(id=ident, function=FunctionCall(name="f", arguments=json.dumps(value)))])
    for event in (RunFinishedEvent(thread_id=ident, run_id="r", result=value, usage=usage),
                  RawEvent(event=value, source=ident), CustomEvent(name=ident, value=value),
                  MessagesSnapshotEvent(messages=[UserMessage(id="u", content=ident), message])):
        assert event_json(event, NO_SECRETS) == event.model_dump_json(by_alias=True, exclude_none=True)


FIXTURES = Path(__file__).parents[1] / "fixtures"


def _adapter_events(folder: str, pattern: str) -> list:
    events = []
    for path in sorted((FIXTURES / folder).glob(pattern)):
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        if folder == "gemini":
            gemini = GeminiCliAdapter("thread", "run")
            events += [e for line in lines for e in gemini.feed(line)] + gemini.finish(Exit(0))
        elif folder == "codex":
            codex = CodexEventAdapter("thread", "run", model="gpt-5.5")
            events += [e for line in lines for e in codex.feed(json.loads(line))] + codex.finish()
        else:
            claude = ClaudeEventAdapter("thread", "run")
            events += [e for line in lines for e in claude.feed(json.loads(line))] + claude.finish()
    return events


@pytest.mark.parametrize(("folder", "pattern"), [("gemini", "*.stdout.jsonl"), ("codex", "*.jsonl"),
                                                 ("claude", "*.jsonl")])
def test_every_event_of_the_recorded_streams_encodes_as_pydantic_does(folder, pattern):
    events = _adapter_events(folder, pattern)
    kinds = {event.type for event in events}
    assert len(events) > 20 and {EventType.RUN_FINISHED, EventType.TOOL_CALL_START} <= kinds, kinds
    for event in events:
        assert event_json(event, NO_SECRETS) == event.model_dump_json(by_alias=True, exclude_none=True)


def test_events_with_floats_extras_or_deep_nesting_are_written_by_pydantic():
    finished = RunFinishedEvent(thread_id="t", run_id="r", result={"usage": {"input": 1, "cost": 0.5, "x": None}})
    assert json.loads(event_json(finished, NO_SECRETS))["result"] == {"usage": {"input": 1, "cost": 0.5, "x": None}}
    assert event_json(finished, NO_SECRETS) == finished.model_dump_json(by_alias=True, exclude_none=True)
    deep: list = []
    for _ in range(200):
        deep = [deep]
    raw = RawEvent(event=deep)
    assert event_json(raw, NO_SECRETS) == raw.model_dump_json(by_alias=True, exclude_none=True)
    with_extra = TextMessageStartEvent(message_id="m", role="assistant", extraField=1.5)
    assert event_json(with_extra, NO_SECRETS) == with_extra.model_dump_json(by_alias=True, exclude_none=True)


def test_tricky_strings_and_events_with_more_fields():
    for delta in ['quote " backslash \\ slash /', "\x00\x01\x1f\x7f control", "é ü 中文 🎉", "\u2028\u2029", "\n\r\t"]:
        event = TextMessageContentEvent(message_id="m", delta=delta)
        assert event_json(event, NO_SECRETS) == event.model_dump_json(by_alias=True, exclude_none=True)
    stamped = TextMessageContentEvent(message_id="m", delta="x", timestamp=5, metadata={"a": 1})
    assert event_json(stamped, NO_SECRETS) == stamped.model_dump_json(by_alias=True, exclude_none=True)
    assert '"timestamp":5' in event_json(stamped, NO_SECRETS)


def test_secrets_are_removed_on_the_direct_path_too():
    event = TextMessageContentEvent(message_id="m", delta="token sk-abcdef-123456 here")
    assert event_json(event, Redactor(["sk-abcdef-123456"])) == (
        '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"token [REDACTED] here"}')
    assert sse_frame(7, "{}") == "id: 7\ndata: {}\n\n"


# Pieces of every shape's probe, of the shapes themselves and of JSON's structure: text built of them puts probes
# inside, at the edges of and across a value's tokens, escaped (quotes, backslashes, newlines) or not.
PIECES = ["ghp_", "gh", "o_", "github_pat_", "glpat-", "sk", "-", "sk-", "AIza", "xox", "b-", "AKIA", "eyJ", "ey",
          "J", "uthorization", "Authorization: Bearer ", "UTHORIZATION", "PRIVATE KEY-----", "-----BEGIN ", ":", "//",
          "://", "user:pw@", "@", '"', "\\", "\n", ",", "{", "}", "x" * 40, "A" * 16, "0123456789", " ", "é",
          "fake-api-key-0123456789", "fake-api-", "key-0123456789"]
pieced = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)


@settings(max_examples=1500, deadline=None)
@given(ident=pieced, name=pieced, delta=pieced, stamp=st.none() | st.integers(min_value=0, max_value=2**53 - 1))
def test_the_direct_path_redacts_exactly_as_the_whole_text(ident, name, delta, stamp):
    """``event_json`` looks for the shapes' probes in the string values only (``Redactor.json_tokens``): it must
    remove exactly what the redactor removes from pydantic's whole JSON text."""
    redact = Redactor(["fake-api-key-0123456789", 'quote"and\\slash-secret'])
    for event in (TextMessageContentEvent(message_id=ident or "m", delta=delta or "d", timestamp=stamp),
                  ToolCallStartEvent(tool_call_id=ident, tool_call_name=name, parent_message_id=delta or None),
                  ToolCallResultEvent(message_id=name, tool_call_id=ident, content=delta, role="tool"),
                  RunErrorEvent(message=delta, code=name or None, timestamp=stamp)):
        event_json(event, NO_SECRETS)  # the class's first event is checked against pydantic: the direct path after
        assert event_json(event, redact) == redact(event.model_dump_json(by_alias=True, exclude_none=True))
