"""The ``RUN_ERROR`` codes every adapter uses, and the one mapping of a model API's HTTP status to a code: the same
failure gets the same code whichever CLI met it."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    AUTH_FAILED = "AUTH_FAILED"  # 401 / 403: the credential was rejected
    RATE_LIMITED = "RATE_LIMITED"  # 429: rate limit or quota
    BAD_REQUEST = "BAD_REQUEST"  # another 4xx: the API refused the request as sent
    MODEL_NOT_FOUND = "MODEL_NOT_FOUND"  # 404: no such model or endpoint
    PROVIDER_OVERLOADED = "PROVIDER_OVERLOADED"  # 529: the provider says it is overloaded
    PROVIDER_ERROR = "PROVIDER_ERROR"  # 5xx: a server error, usually temporary
    PROVIDER_UNREACHABLE = "PROVIDER_UNREACHABLE"  # no answer at all
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    AGENT_ERROR = "AGENT_ERROR"  # the CLI failed some other way


def code_for_status(status: int | None) -> ErrorCode | None:
    """The code for a model API's HTTP error status (``None``: not an HTTP error)."""
    if status is None or status < 400:
        return None
    if status in (401, 403):
        return ErrorCode.AUTH_FAILED
    if status == 429:
        return ErrorCode.RATE_LIMITED
    if status == 404:
        return ErrorCode.MODEL_NOT_FOUND
    if status == 529:
        return ErrorCode.PROVIDER_OVERLOADED
    if status >= 500:
        return ErrorCode.PROVIDER_ERROR
    return ErrorCode.BAD_REQUEST
