"""Event -> wire JSON (camelCase, once per event), with every configured secret removed, and the SSE frame."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from enum import Enum
from json.encoder import encode_basestring

from ag_ui.core import BaseEvent

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
        self._forms = tuple(ordered)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        for form in self._forms:  # a substring test per secret is much faster than the regex scan
            if form in text:
                assert self._pattern is not None
                return self._pattern.sub(REDACTED, text)
        return text

    def __bool__(self) -> bool:
        return self._pattern is not None


def environment_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they hold a credential."""
    environ = dict(os.environ) if environ is None else environ
    return [v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH]


_string: Callable[[str], str] = encode_basestring  # a JSON string literal, as pydantic writes it (C when built)
_wire_keys: dict[type[BaseEvent], tuple[tuple[str, str], ...]] = {}


def _keys_of(kind: type[BaseEvent]) -> tuple[tuple[str, str], ...]:
    """(field name, ``"wireKey":``) for each field of ``kind``, in declaration order (pydantic's order)."""
    keys = _wire_keys.get(kind)
    if keys is None:
        keys = tuple((name, f'"{field.serialization_alias or field.alias or name}":')
                     for name, field in kind.model_fields.items())
        _wire_keys[kind] = keys
    return keys


def _flat_json(event: BaseEvent) -> str | None:
    """The JSON of an event whose fields are all strings, ints, booleans or None; None for any other event."""
    if event.__pydantic_extra__:
        return None
    values = event.__dict__
    parts = []
    for name, key in _keys_of(type(event)):
        value = values[name]
        kind = type(value)
        if kind is str:
            parts.append(key + _string(value))
        elif value is None:
            continue
        elif kind is int:
            parts.append(key + str(value))
        elif kind is bool:
            parts.append(key + ("true" if value else "false"))
        elif isinstance(value, Enum) and type(value.value) is str:
            parts.append(key + _string(value.value))
        else:  # floats, lists, dicts, nested models: pydantic writes them
            return None
    return "{" + ",".join(parts) + "}"


def event_json(event: BaseEvent, redact: Redactor) -> str:
    """The event's wire JSON (camelCase, no null fields), with secrets removed.

    Flat events (all but snapshots, RAW/CUSTOM payloads and results) take a direct path that writes the same
    JSON as pydantic without the ag-ui models' per-field wrap serializer (``tests/core/test_encoding.py``
    checks they agree); the others are written by pydantic.
    """
    text = _flat_json(event)
    if text is None:
        text = event.model_dump_json(by_alias=True, exclude_none=True)
    return redact(text)


def sse_frame(seq: int, data: str) -> str:
    return f"id: {seq}\ndata: {data}\n\n"
