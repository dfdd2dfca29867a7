"""Turn the Gemini CLI's error texts into messages a user can act on.

The CLI reports an API failure as ``[API Error: {"error": {"code": 401, "message": ..., "status": ...}}]``
(the Google error body, quoted) or as free text naming the HTTP status. ``describe_error`` finds the status and
returns a ``Failure``: a message saying what happened and what to do, and its error code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ag_ui_cli_common import ErrorCode, Failure, code_for_status, exit_failure

AGENT = "The Gemini CLI"

CREDENTIAL_HINT = ("Check GEMINI_API_KEY / GOOGLE_API_KEY, or the Vertex AI settings (GOOGLE_CLOUD_PROJECT, "
                   "GOOGLE_APPLICATION_CREDENTIALS), or the mounted login credentials.")
_STATUS_IN_TEXT = re.compile(r"\b(?:status(?: code)?|code|HTTP)[\s:=\"]*([1-5]\d\d)\b", re.IGNORECASE)
_API_ERROR_WRAPPER = re.compile(r"\[API Error: (.*?)\](?:\s|$)", re.DOTALL)
_GOOGLE_STATUS = {
    "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "RESOURCE_EXHAUSTED": 429, "INVALID_ARGUMENT": 400,
    "NOT_FOUND": 404, "INTERNAL": 500, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
}

# The CLI rewrites some API errors into prose without the status (e.g. quota errors in 0.61).
_PHRASES = (
    (re.compile(r"resource has been exhausted|quota|rate.?limit|too many requests", re.IGNORECASE), 429),
    (re.compile(r"api key not valid|invalid api key|unauthenticated|permission denied", re.IGNORECASE), 401),
)


@dataclass(frozen=True)
class ApiErrorDetail:
    http_status: int | None
    text: str


def api_error_detail(raw: str) -> ApiErrorDetail:
    """The HTTP status and the API's own message inside a CLI error text (best effort)."""
    start = raw.find("{")
    if start >= 0:
        try:
            body = json.loads(raw[start: raw.rfind("}") + 1])
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            status = error.get("code")
            if not isinstance(status, int):
                status = _GOOGLE_STATUS.get(str(error.get("status", "")))
            return ApiErrorDetail(status, str(error.get("message") or raw))
    wrapped = _API_ERROR_WRAPPER.search(raw)
    if wrapped:  # "[API Error: <text>]" followed by the CLI's own hint (which suggests interactive /auth)
        raw = wrapped.group(1).strip()
    match = _STATUS_IN_TEXT.search(raw)
    if match:
        return ApiErrorDetail(int(match.group(1)), raw)
    for name, status in _GOOGLE_STATUS.items():
        if name in raw:
            return ApiErrorDetail(status, raw)
    for pattern, status in _PHRASES:
        if pattern.search(raw):
            return ApiErrorDetail(status, raw)
    return ApiErrorDetail(None, raw)


def describe_error(raw: str, error_type: str | None = None, status: int | None = None) -> Failure:
    """A user-actionable failure for the ``error.message`` of a ``result`` line (or an error line, or an ACP
    error). ``status``: the HTTP status when the caller knows it (ACP's error code), else read from the text."""
    detail = api_error_detail(raw)
    status, text = status or detail.http_status, detail.text.strip()
    code = code_for_status(status)
    if code is ErrorCode.AUTH_FAILED:
        return Failure(f"The Gemini API rejected the credentials (HTTP {status}: {text}). {CREDENTIAL_HINT}", code,
                       status)
    if code is ErrorCode.RATE_LIMITED:
        return Failure(f"The Gemini API quota or rate limit was reached (HTTP 429: {text}). "
                       "Wait a moment and try again, or check the project's quota and billing.", code, status)
    if code in (ErrorCode.PROVIDER_ERROR, ErrorCode.PROVIDER_OVERLOADED):
        return Failure(f"The Gemini API had a server error (HTTP {status}: {text}). "
                       "This is usually temporary: try again in a moment.", code, status)
    if code is ErrorCode.MODEL_NOT_FOUND:
        return Failure(f"The Gemini API does not know the requested model or endpoint (HTTP 404: {text}). "
                       "Check the model name.", code, status)
    if code is not None:
        return Failure(f"The Gemini API rejected the request (HTTP {status}: {text}).", code, status)
    if error_type == "FatalTurnLimitedError":
        return Failure(f"{AGENT} stopped: {text}", ErrorCode.TURN_LIMIT)
    if error_type == "FatalCancellationError":
        return Failure(f"{AGENT} cancelled the turn.", ErrorCode.CANCELLED)
    return Failure(f"{AGENT} reported an error: {text}", ErrorCode.AGENT_ERROR, status)


def describe_exit(exit_code: int | None) -> Failure:
    """Why the CLI ended without a ``result`` line, from its exit code (None: unknown): what its own exit codes
    mean, else the shared ``exit_failure`` (a signal, another code)."""
    if exit_code == 42:
        return Failure(f"{AGENT} rejected its input (exit code 42): for a continued conversation this means its "
                       "saved session could not be found, so the conversation could not be resumed.",
                       ErrorCode.RESUME_FAILED)
    if exit_code == 41:
        return Failure(f"{AGENT} could not authenticate (exit code 41). {CREDENTIAL_HINT}", ErrorCode.AUTH_FAILED)
    if exit_code == 52:
        return Failure(f"{AGENT} rejected its configuration (exit code 52).", ErrorCode.CLI_CONFIG_ERROR)
    return exit_failure(AGENT, exit_code)
