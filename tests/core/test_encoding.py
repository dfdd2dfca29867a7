"""The direct JSON path for delta events writes exactly what pydantic writes."""

from __future__ import annotations

from ag_ui.core import ReasoningMessageContentEvent, TextMessageContentEvent, ToolCallArgsEvent
from hypothesis import given, settings
from hypothesis import strategies as st

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
