"""The session token, checked once for every request before routing (a pure ASGI middleware, so an SSE stream passes
through unbuffered): without ``AGUI_TOKEN`` when it is set, every request is ``401 UNAUTHORIZED`` in the API's error
envelope, whatever its path, spelling or method, so a caller without the token learns nothing (no 404, 405, 307 or
422 telling which paths and methods exist). ``GET /health`` alone is open: the operator's probes use it.

The token is ``X-Ambient-Session-Token`` or ``Authorization: Bearer``. When the session token header is present it
alone decides: the platform's backend also forwards the user's own ``Authorization`` on content and git calls.
Constant-time; neither header is ever logged. The OpenAPI document lists both schemes on every operation but the open
one (``security_schemes``, ``is_open``)."""

from __future__ import annotations

import hmac
from collections.abc import Callable

from fastapi.security import APIKeyHeader, HTTPBearer
from starlette.types import ASGIApp, Receive, Scope, Send

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_cli_common.json_types import JsonObject
from ambient_runner.api.errors import error_response

OPEN = frozenset({("GET", "/health")})
SESSION_TOKEN = APIKeyHeader(name="X-Ambient-Session-Token", auto_error=False,
                             description="AGUI_TOKEN, as the platform's backend sends it")
BEARER = HTTPBearer(auto_error=False, description="AGUI_TOKEN as a bearer token")
UNAUTHORIZED_MESSAGE = "missing or wrong token (AGUI_TOKEN)"


def is_open(method: str, path: str) -> bool:
    return (method.upper(), path) in OPEN


def security_schemes() -> dict[str, JsonObject]:
    """The OpenAPI ``components.securitySchemes`` of the token, by the names FastAPI gives them."""
    return {type(scheme).__name__: scheme.model.model_dump(mode="json", by_alias=True, exclude_none=True)
            for scheme in (SESSION_TOKEN, BEARER)}


def token_matches(expected: str, session_token: str | None, authorization: str | None) -> bool:
    """The presented token (the session token header if sent, else a bearer ``Authorization``) against ``expected``."""
    if session_token is not None:
        presented = session_token
    elif authorization is not None and authorization[:7].lower() == "bearer ":
        presented = authorization[7:]
    else:
        presented = ""
    return hmac.compare_digest(presented.strip().encode(), expected.encode())


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


class TokenMiddleware:
    """Installed once, by ``create_app``, inside the access log (refused requests are logged too) and outside the
    router. ``expected`` is read per request: the settings' ``AGUI_TOKEN``, or ``None`` (no token asked)."""

    def __init__(self, app: ASGIApp, expected: Callable[[], str | None]) -> None:
        self.app = app
        self.expected = expected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        expected = self.expected()
        if expected is None or (scope["type"] == "http" and is_open(scope["method"], scope["path"])) or token_matches(
                expected, _header(scope, b"x-ambient-session-token"), _header(scope, b"authorization")):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":  # none is served; refused before the router says so
            await send({"type": "websocket.close", "code": 1008})
            return
        await error_response(401, ErrorCode.UNAUTHORIZED, UNAUTHORIZED_MESSAGE)(scope, receive, send)
