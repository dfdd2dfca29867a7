"""Every error the API answers is JSON in the platform's ``ApiError`` shape: ``{"error": "<message a person can act
on>", "code": "<CODE>", "details"?: {...}}`` (the platform's frontend shows ``error`` as the message); never a stack
trace."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ambient_runner.boot import BootError
from ambient_runner.bridges.contract import Bridge
from ambient_runner.stream.encoding import redact_url

log = logging.getLogger(__name__)
INVALID_MESSAGE = "the request is not valid for this call"


class ErrorBody(BaseModel):
    """The platform's ``ApiError``: what every error answer of this API is."""

    error: str = Field(description="what went wrong, in words a person can act on")
    code: str = Field(description="a stable code, e.g. THREAD_BUSY, INVALID_PATH")
    details: dict[str, Any] | None = Field(None, description="what the code's meaning needs (ids, problems, ...)")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


async def ready_bridge(request: Request, within: float) -> Bridge:
    """The bridge once the runner has booted; 503 ``STARTING`` / ``NOT_READY`` otherwise."""
    try:
        return await request.app.state.boot.ready_bridge(within)
    except BootError as exc:
        code = "STARTING" if not request.app.state.boot.done.is_set() else "NOT_READY"
        raise ApiError(503, code, str(exc)) from None


def error_response(status: int, code: str, message: str, **details: Any) -> JSONResponse:
    body: dict[str, Any] = {"error": redact_url(message), "code": code}  # git's, httpx's or a URL's own words
    if details:
        body["details"] = details
    return JSONResponse(body, status_code=status)


async def _api_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, **exc.details)


async def _http_error(_: Request, exc: Exception) -> Response:
    """Starlette's own: no route (404), a method the path does not take (405, with its ``Allow``)."""
    assert isinstance(exc, HTTPException)
    codes = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
    response = error_response(exc.status_code, codes.get(exc.status_code, "HTTP_ERROR"), str(exc.detail))
    response.headers.update(exc.headers or {})
    return response


async def _invalid(request: Request, exc: Exception) -> Response:
    """A body, path or query parameter its declaration refuses: the code a validator named (an upper-case error
    type, e.g. ``UNSUPPORTED_PROTOCOL``), else the endpoint's (``BodyRules.invalid_code``); every problem listed."""
    assert isinstance(exc, RequestValidationError)
    rules = getattr(getattr(request.scope.get("route"), "endpoint", None), "body_rules", None)  # routing.BodyRules
    errors = list(exc.errors())
    named = next((e for e in errors if str(e.get("type", "")).isupper()), None)
    problems = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in errors[:20]]
    if named is not None:
        context = {k: v for k, v in (named.get("ctx") or {}).items() if isinstance(v, str | int | float | bool)}
        return error_response(422, str(named["type"]), str(named["msg"]), **context)
    code, message = (rules.invalid_code, rules.invalid_message) if rules else ("INVALID_REQUEST", INVALID_MESSAGE)
    return error_response(422, code, message, problems=problems)


async def _unexpected(_: Request, exc: Exception) -> Response:
    log.exception("unexpected error while serving a request")
    return error_response(500, "INTERNAL", f"unexpected {type(exc).__name__}; see the runner log")


ExceptionHandler = Callable[[Request, Any], Coroutine[Any, Any, Response]]
EXCEPTION_HANDLERS: dict[int | type[Exception], ExceptionHandler] = {
    ApiError: _api_error, HTTPException: _http_error, RequestValidationError: _invalid, Exception: _unexpected}
