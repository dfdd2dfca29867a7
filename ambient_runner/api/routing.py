"""What every endpoint shares, written once: the route class that checks a body before FastAPI reads it and the typed
dependencies that hand a handler the runner's objects (the session token is checked before routing: ``token.py``).

``CheckedRoute`` runs, for every call, in this order: the body's size (``BodyRules.limit``, 413 ``BODY_TOO_LARGE``)
and its JSON (422 ``INVALID_JSON``: not JSON, not UTF-8, NaN/Infinity, a lone surrogate, nesting over 100), then the
endpoint's own ``prepare`` of the parsed value.
FastAPI then validates the result against the handler's body model; its errors become the API's envelope in
``errors.py``, under the endpoint's ``invalid_code`` unless a validator named its own code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, TypedDict, TypeVar, Unpack

from fastapi import APIRouter, Depends, Request
from fastapi.routing import APIRoute
from starlette.responses import Response

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_cli_common.json_types import JsonValue
from ambient_runner.api.errors import ApiError, ErrorBody
from ambient_runner.api.run_input import parse_json, read_body
from ambient_runner.boot import Boot
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.runs.manager import RunManager
from ambient_runner.runtime import Runtime, runtime_of
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace.paths import Workspace
from ambient_runner.workspace.repos import Repositories
from ambient_runner.workspace.workflows import Workflows

DEFAULT_BODY_LIMIT = 1024 * 1024
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
Handler = TypeVar("Handler", bound=Callable[..., Awaitable[object]])


@dataclass(frozen=True)
class BodyRules:
    """How an endpoint's body is read: its size bound (a number, or one computed from the settings), what is done to
    the parsed JSON before validation, and the code and words of a body its model refuses."""

    limit: int | Callable[[RunnerSettings], int] = DEFAULT_BODY_LIMIT
    prepare: Callable[[JsonValue], JsonValue] | None = None
    invalid_code: ErrorCode = ErrorCode.INVALID_REQUEST
    invalid_message: str = "the body is not valid for this call"

    def bound(self, settings: RunnerSettings) -> int:
        return self.limit(settings) if callable(self.limit) else self.limit


NO_RULES = BodyRules()


class Rules(TypedDict, total=False):
    """``body_rules``' keywords: ``BodyRules``' fields."""

    limit: int | Callable[[RunnerSettings], int]
    prepare: Callable[[JsonValue], JsonValue] | None
    invalid_code: ErrorCode
    invalid_message: str


def body_rules(**rules: Unpack[Rules]) -> Callable[[Handler], Handler]:
    """``@body_rules(limit=..., prepare=..., invalid_code=...)`` above a handler (below its route decorator)."""
    def attach(handler: Handler) -> Handler:
        handler.body_rules = BodyRules(**rules)  # type: ignore[attr-defined]  # read back by rules_of()
        return handler
    return attach


def rules_of(endpoint: object) -> BodyRules:
    return getattr(endpoint, "body_rules", NO_RULES)


class CheckedRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[object, object, Response]]:
        handler = super().get_route_handler()
        rules = rules_of(self.endpoint)
        required = any(field.field_info.is_required() for field in self.dependant.body_params)

        async def checked(request: Request) -> Response:
            if request.method in BODY_METHODS:
                body = await read_body(request, limit=rules.bound(runtime_of(request).settings))
                request._body = body  # what FastAPI reads next
                if body.strip():
                    data = parse_json(body)
                    request._json = rules.prepare(data) if rules.prepare else data
                elif required:
                    raise ApiError(422, ErrorCode.INVALID_JSON, "the body is empty; send a JSON object")
            return await handler(request)

        return checked


def router() -> APIRouter:
    """A module's router: the checked route class and the error envelope as every call's error answer. The token is
    checked before routing, for every call but ``GET /health`` (``token.py``)."""
    return APIRouter(route_class=CheckedRoute, responses={"default": {"model": ErrorBody, "description": "an error"}})


# ----- the runner's objects, typed: read from the app's Runtime ------------------------------------------------
async def the_runtime(request: Request) -> Runtime:  # async: FastAPI would run a plain function in its thread pool
    return runtime_of(request)


def _state(name: str) -> Callable[[Request], Awaitable[object]]:
    async def get(request: Request) -> object:
        return getattr(runtime_of(request), name)
    get.__name__ = f"the_{name}"
    return get


RuntimeState = Annotated[Runtime, Depends(the_runtime)]
Settings = Annotated[RunnerSettings, Depends(_state("settings"))]
Runs = Annotated[RunManager, Depends(_state("runs"))]
Metrics = Annotated[RunnerMetrics, Depends(_state("metrics"))]
BootState = Annotated[Boot, Depends(_state("boot"))]
WorkspaceRoot = Annotated[Workspace, Depends(_state("workspace"))]
Repos = Annotated[Repositories, Depends(_state("repos"))]
WorkflowSet = Annotated[Workflows, Depends(_state("workflows"))]
