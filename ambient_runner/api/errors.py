"""Every error the API answers is JSON: ``{"error": {"code", "message", "details"?}}``; never a stack trace."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ambient_runner.boot import BootError
from ambient_runner.bridges.contract import Bridge

log = logging.getLogger(__name__)


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
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    return JSONResponse({"error": body}, status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, **exc.details)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [{"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", "")} for e in exc.errors()]
        return error_response(422, "INVALID_REQUEST", "the request is not valid", problems=problems[:20])

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
        return error_response(exc.status_code, codes.get(exc.status_code, "HTTP_ERROR"), str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error while serving a request")
        return error_response(500, "INTERNAL", f"unexpected {type(exc).__name__}; see the runner log")
