"""Event -> wire JSON (camelCase, once per event), with every configured secret removed, and the SSE frame."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable

from ag_ui.core import BaseEvent, ReasoningMessageContentEvent, TextMessageContentEvent, ToolCallArgsEvent

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 6
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)


class Redactor:
    """Replaces each secret value (and its JSON-escaped form) with ``[REDACTED]``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= MIN_SECRET_LENGTH:
                forms.add(secret)
                forms.add(json.dumps(secret)[1:-1])
        ordered = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)

    def __bool__(self) -> bool:
        return self._pattern is not None


def environment_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they hold a credential."""
    environ = dict(os.environ) if environ is None else environ
    return [v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH]


_DELTA_KEYS = {
    TextMessageContentEvent: ("TEXT_MESSAGE_CONTENT", "messageId", "message_id"),
    ReasoningMessageContentEvent: ("REASONING_MESSAGE_CONTENT", "messageId", "message_id"),
    ToolCallArgsEvent: ("TOOL_CALL_ARGS", "toolCallId", "tool_call_id"),
}
_PLAIN_DELTA_FIELDS = {
    TextMessageContentEvent: frozenset({"type", "message_id", "delta"}),
    ReasoningMessageContentEvent: frozenset({"type", "message_id", "delta"}),
    ToolCallArgsEvent: frozenset({"type", "tool_call_id", "delta"}),
}
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def event_json(event: BaseEvent, redact: Redactor) -> str:
    """The event's wire JSON (camelCase, no null fields), with secrets removed.

    The delta events, most of any stream, take a direct path that writes the same JSON as pydantic without the
    ag-ui models' per-field wrap serializer (``tests/core/test_encoding.py`` checks they agree).
    """
    kind = type(event)
    keys = _DELTA_KEYS.get(kind)
    if keys is not None and event.model_fields_set <= _PLAIN_DELTA_FIELDS[kind] and not event.__pydantic_extra__:
        name, id_key, id_field = keys
        text = (f'{{"type":"{name}","{id_key}":{_dumps(getattr(event, id_field))},'
                f'"delta":{_dumps(event.delta)}}}')  # type: ignore[attr-defined]
    else:
        text = event.model_dump_json(by_alias=True, exclude_none=True)
    return redact(text)


def sse_frame(seq: int, data: str) -> str:
    return f"id: {seq}\ndata: {data}\n\n"
