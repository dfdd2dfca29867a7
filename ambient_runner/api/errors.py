"""Every error the API answers is JSON in the platform's ``ApiError`` shape: ``{"error": "<message a person can act
on>", "code": "<CODE>", "details"?: {...}}`` (the platform's frontend shows ``error`` as the message); never a stack
trace.

A ``RunnerError`` raised while serving a request is answered here, by one handler: an ``ApiError`` (a refusal an
endpoint words itself) with its own status, any other with its code's status (``STATUS``); a code without one is
the runner's bug, a 500 ``INTERNAL``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.boot import BootError
from ambient_runner.bridges.contract import Bridge
from ambient_runner.runtime import runtime_of
from ambient_runner.stream.encoding import redact_url

log = logging.getLogger(__name__)
INVALID_MESSAGE = "the request is not valid for this call"


class ErrorBody(BaseModel):
    """The platform's ``ApiError``: what every error answer of this API is."""

    error: str = Field(description="what went wrong, in words a person can act on")
    code: str = Field(description="a stable code, e.g. THREAD_BUSY, INVALID_PATH")
    details: dict[str, object] | None = Field(None, description="what the code's meaning needs (ids, problems, ...)")


# The HTTP status of each code a request may be refused with, when the error is raised below the API.
STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_PATH: 400, ErrorCode.PATH_REFUSED: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.THREAD_BUSY: 409, ErrorCode.REPO_EXISTS: 409, ErrorCode.TASK_NOT_STOPPABLE: 409,
    ErrorCode.FILE_TOO_LARGE: 413,
    ErrorCode.NO_PROMPT: 422, ErrorCode.CONTEXT_TOO_LARGE: 422, ErrorCode.INVALID_OPTION: 422,
    ErrorCode.INVALID_ATTACHMENT: 422, ErrorCode.INVALID_RESUME: 422, ErrorCode.UNKNOWN_INTERRUPT: 422,
    ErrorCode.NO_OPEN_QUESTION: 422, ErrorCode.INVALID_ANSWER: 422, ErrorCode.INTERRUPTS_UNANSWERED: 422,
    ErrorCode.QUEUE_FULL: 429,
    ErrorCode.DRAINING: 503, ErrorCode.PREVIOUS_RUN_STUCK: 503,
}


class ApiError(RunnerError):
    """A refusal an endpoint words itself, with its status."""

    def __init__(self, status: int, code: ErrorCode, message: str, **details: object) -> None:
        super().__init__(message, code=code, **details)
        self.status = status


def http_status(error: RunnerError) -> int | None:
    """The status ``error`` answers a request with; None: it is no answer (a bug of the runner's)."""
    return error.status if isinstance(error, ApiError) else STATUS.get(error.code)


async def ready_bridge(request: Request, within: float) -> Bridge:
    """The bridge once the runner has booted; 503 ``STARTING`` / ``NOT_READY`` otherwise."""
    boot = runtime_of(request).boot
    try:
        return await boot.ready_bridge(within)
    except BootError as exc:
        code = ErrorCode.STARTING if not boot.done.is_set() else ErrorCode.NOT_READY
        raise ApiError(503, code, str(exc)) from None


def error_response(status: int, code: str, message: str, **details: object) -> JSONResponse:
    """The envelope; ``code`` an ``ErrorCode``, or the code a body validator named."""
    body: dict[str, object] = {"error": redact_url(message), "code": code}  # git's, httpx's or a URL's own words
    if details:
        body["details"] = details
    return JSONResponse(body, status_code=status)


async def _runner_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RunnerError)
    status = http_status(exc)
    if status is None:
        raise exc  # the server's error answer (_unexpected), as for any other bug
    return error_response(status, exc.code, exc.message, **exc.details)


async def _http_error(_: Request, exc: Exception) -> Response:
    """Starlette's own: no route (404), a method the path does not take (405, with its ``Allow``)."""
    assert isinstance(exc, HTTPException)
    codes = {404: ErrorCode.NOT_FOUND, 405: ErrorCode.METHOD_NOT_ALLOWED}
    response = error_response(exc.status_code, codes.get(exc.status_code, ErrorCode.HTTP_ERROR), str(exc.detail))
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
    code, message = (rules.invalid_code, rules.invalid_message) if rules else (ErrorCode.INVALID_REQUEST,
                                                                               INVALID_MESSAGE)
    return error_response(422, code, message, problems=problems)


async def _unexpected(_: Request, exc: Exception) -> Response:
    log.exception("unexpected error while serving a request")
    return error_response(500, ErrorCode.INTERNAL, f"unexpected {type(exc).__name__}; see the runner log")


ExceptionHandler = Callable[[Request, Exception], Coroutine[object, object, Response]]
EXCEPTION_HANDLERS: dict[int | type[Exception], ExceptionHandler] = {
    RunnerError: _runner_error, HTTPException: _http_error, RequestValidationError: _invalid, Exception: _unexpected}
