"""Parsing a ``POST /run`` body into ``RunAgentInput`` with clear 4xx answers for anything malformed."""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from collections.abc import Iterable
from typing import NoReturn

from ag_ui.core import RunAgentInput
from pydantic import Field
from starlette.requests import Request

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_cli_common.json_types import JsonValue
from ambient_runner.api.errors import ApiError

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_NESTING = 100  # objects and arrays inside each other; deeper is no AG-UI input, and pydantic cannot write it back
ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # only an escape can carry a surrogate into valid UTF-8 JSON
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_ID_CHARS = 256
MAX_MESSAGES = 10_000


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, ErrorCode.BODY_TOO_LARGE, f"the body is larger than {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, ErrorCode.BODY_TOO_LARGE, f"the body is larger than {limit} bytes")
    return bytes(body)


def parse_json(body: bytes) -> JsonValue:
    if not body.strip():
        raise ApiError(422, ErrorCode.INVALID_JSON, "the body is empty; send an AG-UI RunAgentInput as JSON")
    try:
        data: JsonValue = json.loads(body, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise ApiError(422, ErrorCode.INVALID_JSON, "the body is not valid UTF-8") from None
    except RecursionError:
        raise ApiError(422, ErrorCode.INVALID_JSON, "the body is nested too deeply") from None
    except ValueError as exc:
        raise ApiError(422, ErrorCode.INVALID_JSON, f"the body is not valid JSON: {exc}") from None
    _check_values(data, surrogates=ESCAPED_SURROGATE.search(body) is not None)
    return data


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _check_values(data: JsonValue, *, surrogates: bool) -> None:
    """No nesting deeper than ``MAX_NESTING``, and (when the body escapes one) no lone surrogate in any string."""
    kinds = (dict, list, str) if surrogates else (dict, list)
    stack: list[tuple[JsonValue, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            items: Iterable[JsonValue] = [*value.keys(), *value.values()] if surrogates else value.values()
        elif isinstance(value, list):
            items = value
        else:
            if surrogates and isinstance(value, str) and LONE_SURROGATE.search(value):
                raise ApiError(422, ErrorCode.INVALID_JSON, "the body holds a lone UTF-16 surrogate "
                               "(\\ud800-\\udfff), which is no character")
            continue
        if depth >= MAX_NESTING:
            raise ApiError(422, ErrorCode.INVALID_JSON, f"the body is nested more than {MAX_NESTING} levels deep")
        stack.extend((item, depth + 1) for item in items if isinstance(item, kinds))


def check_id(name: str, value: str) -> str:
    if not value or not value.strip():
        raise ApiError(422, ErrorCode.INVALID_REQUEST, f"{name} must not be empty")
    if len(value) > MAX_ID_CHARS:
        raise ApiError(422, ErrorCode.INVALID_REQUEST, f"{name} is longer than {MAX_ID_CHARS} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):
        raise ApiError(422, ErrorCode.INVALID_REQUEST, f"{name} must not contain control characters")
    return value


class RunInput(RunAgentInput):
    """The body of ``POST /run``: an AG-UI ``RunAgentInput``, whose ``runId`` the runner makes when it is left out."""

    run_id: str = Field(default_factory=lambda: str(uuid.uuid4()), alias="runId")


def prepare_run_input(data: JsonValue) -> JsonValue:
    """What clients send, in ``RunAgentInput``'s terms before it is validated: a ``context`` object (the platform's
    backend passes one through as it came) as its list of entries, and an id for each message that has none."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    context = data.get("context")
    if isinstance(context, dict):
        data["context"] = [{"description": str(k), "value": v if isinstance(v, str) else json.dumps(v, default=str)}
                           for k, v in context.items()]
    messages = data.get("messages")
    if isinstance(messages, list):
        if len(messages) > MAX_MESSAGES:
            raise ApiError(422, ErrorCode.INVALID_REQUEST, f"more than {MAX_MESSAGES} messages")
        data["messages"] = [{"id": str(uuid.uuid4()), **m} if isinstance(m, dict) and "id" not in m else m
                            for m in messages]
    return data


def check_run_input(run_input: RunAgentInput) -> RunAgentInput:
    """The ids and the protocol version, which the model itself does not bound."""
    check_id("threadId", run_input.thread_id)
    check_id("runId", run_input.run_id)
    check_protocol(run_input.protocol_version)
    return run_input


def check_protocol(version: str | None) -> None:
    """Absent or any AG-UI 1.x is accepted; another major (or no version number) is a 422 saying what is spoken."""
    if version is None:
        return
    major = version.strip().split(".", 1)[0]
    if major != "1":
        raise ApiError(422, ErrorCode.UNSUPPORTED_PROTOCOL, f"this runner speaks AG-UI 1.x; the run says "
                       f"protocolVersion {version[:40]!r}", protocolVersion="1.0")
