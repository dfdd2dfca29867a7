"""What every endpoint shares, written once: the route class that checks a body before FastAPI reads it, the
session-token security dependency, and the typed dependencies that hand a handler the runner's objects.

``CheckedRoute`` runs, for every call, in this order: the token (so a caller without it learns nothing from a 422),
then the body's size (``BodyRules.limit``, 413 ``BODY_TOO_LARGE``) and its JSON (422 ``INVALID_JSON``: not JSON, not
UTF-8, NaN/Infinity, a lone surrogate, nesting over 100), then the endpoint's own ``prepare`` of the parsed value.
FastAPI then validates the result against the handler's body model; its errors become the API's envelope in
``errors.py``, under the endpoint's ``invalid_code`` unless a validator named its own code.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request, Security
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.responses import Response

from ambient_runner.api.errors import ApiError, ErrorBody
from ambient_runner.api.run_input import parse_json, read_body
from ambient_runner.boot import Boot
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.runs.manager import RunManager
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace.paths import Workspace
from ambient_runner.workspace.repos import Repositories
from ambient_runner.workspace.workflows import Workflows

DEFAULT_BODY_LIMIT = 1024 * 1024
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])


@dataclass(frozen=True)
class BodyRules:
    """How an endpoint's body is read: its size bound (a number, or one computed from the settings), what is done to
    the parsed JSON before validation, and the code and words of a body its model refuses."""

    limit: int | Callable[[RunnerSettings], int] = DEFAULT_BODY_LIMIT
    prepare: Callable[[Any], Any] | None = None
    invalid_code: str = "INVALID_REQUEST"
    invalid_message: str = "the body is not valid for this call"

    def bound(self, settings: RunnerSettings) -> int:
        return self.limit(settings) if callable(self.limit) else self.limit


NO_RULES = BodyRules()


def body_rules(**rules: Any) -> Callable[[Handler], Handler]:
    """``@body_rules(limit=..., prepare=..., invalid_code=...)`` above a handler (below its route decorator)."""
    def attach(handler: Handler) -> Handler:
        handler.body_rules = BodyRules(**rules)  # type: ignore[attr-defined]  # read back by rules_of()
        return handler
    return attach


def rules_of(endpoint: Any) -> BodyRules:
    return getattr(endpoint, "body_rules", NO_RULES)


# ----- the session token --------------------------------------------------------------------------------------
SESSION_TOKEN = APIKeyHeader(name="X-Ambient-Session-Token", auto_error=False,
                             description="AGUI_TOKEN, as the platform's backend sends it")
BEARER = HTTPBearer(auto_error=False, description="AGUI_TOKEN as a bearer token")


def check_token(expected: str | None, session_token: str | None, bearer: str | None) -> None:
    """``AGUI_TOKEN``, when set, as ``X-Ambient-Session-Token`` or ``Authorization: Bearer``. When the session token
    header is present it alone decides: the platform's backend also forwards the user's own ``Authorization`` on
    content and git calls. Constant-time; neither header is ever logged."""
    if expected is None:
        return
    presented = (session_token if session_token is not None else bearer or "").strip()
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        raise ApiError(401, "UNAUTHORIZED", "missing or wrong token (AGUI_TOKEN)")


def _expected_token(request: Request) -> str | None:
    token = request.app.state.settings.agui_token
    return token.get_secret_value() if token else None


async def require_token(request: Request, session_token: Annotated[str | None, Security(SESSION_TOKEN)],
                        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]) -> None:
    """The security dependency of every endpoint but ``/health`` (documented in ``/openapi.json``); a route of
    ``CheckedRoute`` has checked the same headers already, before reading the body."""
    if getattr(request.state, "token_checked", False):
        return
    check_token(_expected_token(request), session_token, bearer.credentials if bearer else None)


def _token_first(request: Request) -> None:
    """The same check, before the body is read (FastAPI reads the body before it solves dependencies)."""
    bearer = request.headers.get("authorization", "")
    check_token(_expected_token(request), request.headers.get("x-ambient-session-token"),
                bearer[7:] if bearer[:7].lower() == "bearer " else None)


class CheckedRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        rules, open_route = rules_of(self.endpoint), not any(
            d.call is require_token for d in self.dependant.dependencies)
        required = any(field.field_info.is_required() for field in self.dependant.body_params)

        async def checked(request: Request) -> Response:
            if not open_route:
                _token_first(request)
                request.state.token_checked = True
            if request.method in BODY_METHODS:
                body = await read_body(request, limit=rules.bound(request.app.state.settings))
                request._body = body  # what FastAPI reads next
                if body.strip():
                    data = parse_json(body)
                    request._json = rules.prepare(data) if rules.prepare else data
                elif required:
                    raise ApiError(422, "INVALID_JSON", "the body is empty; send a JSON object")
            return await handler(request)

        return checked


def router(*, open_route: bool = False) -> APIRouter:
    """A module's router: the checked route class, the error envelope as every call's error answer, and the token
    (unless ``open_route``: ``/health`` alone)."""
    return APIRouter(route_class=CheckedRoute, dependencies=[] if open_route else [Depends(require_token)],
                     responses={"default": {"model": ErrorBody, "description": "an error"}})


# ----- the runner's objects, typed ------------------------------------------------------------------------------
def _state(name: str) -> Callable[[Request], Any]:
    async def get(request: Request) -> Any:  # async: FastAPI would run a plain function in its thread pool
        return getattr(request.app.state, name)
    get.__name__ = f"the_{name}"
    return get


Settings = Annotated[RunnerSettings, Depends(_state("settings"))]
Runs = Annotated[RunManager, Depends(_state("runs"))]
Metrics = Annotated[RunnerMetrics, Depends(_state("metrics"))]
BootState = Annotated[Boot, Depends(_state("boot"))]
WorkspaceRoot = Annotated[Workspace, Depends(_state("workspace"))]
Repos = Annotated[Repositories, Depends(_state("repos"))]
WorkflowSet = Annotated[Workflows, Depends(_state("workflows"))]
