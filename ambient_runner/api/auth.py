"""``AGUI_TOKEN``: when set, every endpoint but ``/health`` needs it (constant-time comparison).

Accepted as ``X-Ambient-Session-Token: <token>`` (the platform backend's header) or ``Authorization: Bearer
<token>``. When the session token header is present it alone decides: the platform's backend also forwards the
user's own ``Authorization`` on content and git calls (and Go writes headers sorted, ``Authorization`` first), so a
valid ``X-Ambient-Session-Token`` is enough whatever else is sent. Neither header is ever logged.
"""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from ambient_runner.api.errors import error_response

OPEN_PATHS = frozenset({"/health"})


class TokenAuthMiddleware:
    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self._token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._token is None or scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if not hmac.compare_digest(self._presented(scope), self._token):
            response = error_response(401, "UNAUTHORIZED", "missing or wrong token (AGUI_TOKEN)")
            response.headers["www-authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _presented(scope: Scope) -> bytes:
        bearer = b""
        for name, value in scope.get("headers", ()):
            if name == b"x-ambient-session-token":
                return value.strip()
            if name == b"authorization" and not bearer and value[:7].lower() == b"bearer ":
                bearer = value[7:].strip()
        return bearer
