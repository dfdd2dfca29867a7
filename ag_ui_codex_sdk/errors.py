"""A failed Codex turn in words a user can act on.

Codex reports provider failures as ``error`` notifications and as ``turn.error`` of a failed
``turn/completed``: ``{"message": "unexpected status 401 Unauthorized: ...", "codexErrorInfo": ...}`` where
``codexErrorInfo`` is a camelCase code (``"unauthorized"``, ``"usageLimitExceeded"``...) or an object such as
``{"httpConnectionFailed": {"httpStatusCode": 401}}``. A request the API refused (HTTP 400, the pinned codex) comes as
``codexErrorInfo`` ``"other"`` with the API's error body as the message (``{"error": {"type":
"invalid_request_error", "message": ...}}``): its ``type`` says the status.
"""

from __future__ import annotations

import json
import re

from ag_ui_cli_common import ErrorCode, Failure, code_for_status
from ag_ui_cli_common.json_types import JsonObject, JsonValue, object_or_empty

STATUS_IN_MESSAGE = re.compile(r"\b(?:status|HTTP)\s*:?\s*(\d{3})\b", re.IGNORECASE)
URL_SUFFIX = re.compile(r",?\s*url:\s*\S+\s*$")
API_ERROR_TYPES = {  # OpenAI's error body "type" -> the HTTP status it comes with
    "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403, "not_found_error": 404,
    "rate_limit_error": 429, "insufficient_quota": 429, "server_error": 500,
}


def http_status(error: JsonObject) -> int | None:
    """The upstream HTTP status of a Codex turn error, if it names one."""
    info = error.get("codexErrorInfo")
    if isinstance(info, dict):
        for value in info.values():
            code = value.get("httpStatusCode") if isinstance(value, dict) else None
            if isinstance(code, int):
                return int(code)
    match = STATUS_IN_MESSAGE.search(str(error.get("message", "")))
    if match:
        return int(match.group(1))
    body = api_error_body(str(error.get("message", "")))
    return API_ERROR_TYPES.get(str(body.get("type"))) if body else None


def api_error_body(message: str) -> JsonObject | None:
    """The ``error`` object of an API error body given as the message, if it is one."""
    text = message.strip()
    if not text.startswith("{"):
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


def error_kind(error: JsonObject) -> str:
    info = error.get("codexErrorInfo")
    if isinstance(info, str):
        return info
    if isinstance(info, dict) and info:
        return next(iter(info))
    return "other"


def describe_failure(error: JsonValue) -> Failure:
    """Map a Codex turn error (an object, or nothing) to a ``Failure`` (message + code)."""
    error = object_or_empty(error)
    detail = URL_SUFFIX.sub("", str(error.get("message") or "").strip())
    body = api_error_body(detail)
    if body and body.get("message"):  # the API's own words, not its JSON
        detail = str(body["message"])
    extra = str(error.get("additionalDetails") or "").strip()
    if extra:
        detail = f"{detail} ({extra})" if detail else extra
    suffix = f" Details: {detail}" if detail else ""
    status, kind = http_status(error), error_kind(error)
    code = code_for_status(status)
    if code is ErrorCode.AUTH_FAILED or kind == "unauthorized":
        shown = status or 401
        return Failure(f"OpenAI rejected the API key (HTTP {shown}). Check OPENAI_API_KEY / CODEX_API_KEY "
                       f"(or the mounted auth.json).{suffix}", ErrorCode.AUTH_FAILED, status)
    if code is ErrorCode.RATE_LIMITED or kind in ("rateLimitExceeded", "usageLimitExceeded", "sessionBudgetExceeded"):
        return Failure("OpenAI rate limit or quota reached (HTTP 429). Wait and retry, or check the plan and "
                       f"billing of the OpenAI account.{suffix}", ErrorCode.RATE_LIMITED, status)
    if code in (ErrorCode.PROVIDER_ERROR, ErrorCode.PROVIDER_OVERLOADED) or kind in ("internalServerError",
                                                                                      "serverOverloaded"):
        return Failure(f"The OpenAI API returned a server error (HTTP {status or '5xx'}). Retry in a moment.{suffix}",
                       code or ErrorCode.PROVIDER_ERROR, status)
    if kind == "contextWindowExceeded":
        return Failure("The conversation no longer fits the model's context window. Start a new thread."
                       f"{suffix}", ErrorCode.CONTEXT_WINDOW_EXCEEDED, status)
    if status is None and kind in ("responseStreamConnectionFailed", "responseStreamDisconnected",
                                   "httpConnectionFailed", "responseTooManyFailedAttempts"):  # no answer at all
        return Failure(f"Codex could not reach the model API (connection failed). Check the network and "
                       f"OPENAI_BASE_URL.{suffix}", ErrorCode.PROVIDER_UNREACHABLE, status)
    if code is not None or kind == "badRequest":
        return Failure(f"The model API rejected the request (HTTP {status or 400}).{suffix}",
                       code or ErrorCode.BAD_REQUEST, status)
    return Failure(f"The Codex turn failed.{suffix}", ErrorCode.AGENT_ERROR, status)
