"""Typed lines of ``gemini --output-format stream-json`` (CLI 0.61: six event types).

``parse_line`` never raises: a line that is not JSON, has an unknown ``type`` or does not fit its model comes
back as ``UnparsedLine`` (kept whole, so the adapter can pass it on as a RawEvent). Unknown fields of known
event types are allowed and kept in ``model_extra``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ag_ui_cli_common.json_types import JsonObject, JsonValue


class _Line(BaseModel):
    model_config = ConfigDict(extra="allow")

    timestamp: str | None = None


class InitLine(_Line):
    type: Literal["init"]
    session_id: str
    model: str | None = None


class MessageLine(_Line):
    type: Literal["message"]
    role: str
    content: str = ""
    delta: bool = False


class ToolUseLine(_Line):
    type: Literal["tool_use"]
    tool_name: str
    tool_id: str
    parameters: JsonObject = Field(default_factory=dict)


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str | None = None
    message: str = ""


class ToolResultLine(_Line):
    type: Literal["tool_result"]
    tool_id: str
    status: str
    output: str | None = None
    error: ErrorInfo | None = None


class ErrorLine(_Line):
    """A non-fatal problem the CLI reports while it keeps going (``severity`` warning or error)."""

    type: Literal["error"]
    severity: str = "warning"
    message: str = ""


class ModelStats(BaseModel):
    model_config = ConfigDict(extra="allow")

    total_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached: int = 0
    input: int = 0


class ResultStats(ModelStats):
    duration_ms: int | None = None
    tool_calls: int | None = None
    models: dict[str, ModelStats] = Field(default_factory=dict)


class ResultLine(_Line):
    type: Literal["result"]
    status: str
    error: ErrorInfo | None = None
    stats: ResultStats | None = None


GeminiLine = Annotated[
    InitLine | MessageLine | ToolUseLine | ToolResultLine | ErrorLine | ResultLine,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[GeminiLine] = TypeAdapter(GeminiLine)
# the adapter's pydantic-core validator, called directly on the hot path: the same validation without
# ``TypeAdapter.validate_json``'s Python wrapper (its argument checks), a call per line
_validate_json = _ADAPTER.validator.validate_json
KNOWN_TYPES = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})


@dataclass(frozen=True)
class UnparsedLine:
    """A line the adapter could not type: ``reason`` is not_json, not_object, unknown_type or invalid."""

    reason: str
    raw: JsonValue  # the line's text, or what it decoded to
    detail: str = ""


def parse_line(text: str) -> GeminiLine | UnparsedLine | None:
    """One stdout line -> a typed event, an ``UnparsedLine``, or None for a blank line."""
    text = text.strip()
    if not text:
        return None
    try:  # the common case in one step: a well-formed line of a known type
        return _validate_json(text)  # the validator of GeminiLine
    except ValidationError:
        pass  # classify it below
    try:
        data = json.loads(text)
    except ValueError as exc:
        return UnparsedLine("not_json", text, str(exc))
    if not isinstance(data, dict):
        return UnparsedLine("not_object", data)
    if data.get("type") not in KNOWN_TYPES:
        return UnparsedLine("unknown_type", data)
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        return UnparsedLine("invalid", data, exc.errors(include_url=False)[0].get("msg", "invalid"))
