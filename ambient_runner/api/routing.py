"""The HTTP API's route table: each endpoint declared once, served by Starlette and described by ``/openapi.json``.

Every handler takes the ``Request`` and reads what it needs itself (path and query parameters, the body through
``read_body``/``parse_json``, so that every bad input is the API's own JSON error). An ``Endpoint`` carries what the
OpenAPI document says of it: its summary, its query parameters and its body's JSON schema. Starlette alone serves
them: FastAPI would add 7 MiB to every idle runner for the parameter injection and schema models this API does
not use.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

Handler = Callable[[Request], Awaitable[Response]]
PATH_PARAMETER = re.compile(r"{(\w+)(?::\w+)?}")
ERROR_SCHEMA = {"type": "object", "required": ["error", "code"], "properties": {
    "error": {"type": "string"}, "code": {"type": "string"}, "details": {"type": "object"}}}


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    handler: Handler
    summary: str
    query: tuple[str, ...] = ()  # optional string parameters
    body: dict[str, Any] | None = None  # the JSON schema of the body it takes
    body_required: bool = True
    media_type: str = "application/json"  # of its 200 answer

    def route(self) -> Route:
        return Route(self.path, self.handler, methods=[self.method], name=f"{self.method} {self.path}")

    @property
    def openapi_path(self) -> str:
        """The path as OpenAPI writes it: ``/events/{thread_id}`` for Starlette's ``/events/{thread_id:path}``."""
        return PATH_PARAMETER.sub(r"{\1}", self.path)

    @property
    def operation_id(self) -> str:
        """Unique per method and path: ``post_run``, ``post_root``, ``get_mcp-status``, ``get_tasks_task_id_output``."""
        path = re.sub(r"[{}]", "", self.openapi_path).strip("/").replace("/", "_")
        return f"{self.method.lower()}_{path or 'root'}"

    def operation(self) -> dict[str, Any]:
        parameters = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                      for name in PATH_PARAMETER.findall(self.path)]
        parameters += [{"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
                       for name in self.query]
        operation: dict[str, Any] = {
            "summary": self.summary, "operationId": self.operation_id,
            "responses": {"200": {"description": "OK", "content": {self.media_type: {}}},
                          "default": {"description": "an error",
                                      "content": {"application/json": {"schema": ERROR_SCHEMA}}}}}
        if parameters:
            operation["parameters"] = parameters
        if self.body is not None:
            operation["requestBody"] = {"required": self.body_required,
                                        "content": {"application/json": {"schema": self.body}}}
        return operation


@dataclass
class Routes:
    """One module's endpoints: ``@routes.get("/health", "Liveness")`` registers the handler below it."""

    endpoints: list[Endpoint] = field(default_factory=list)

    def add(self, method: str, path: str, handler: Handler, summary: str = "", **details: Any) -> None:
        self.endpoints.append(Endpoint(method, path, handler, summary or _first_line(handler), **details))

    def get(self, path: str, summary: str = "", **details: Any) -> Callable[[Handler], Handler]:
        return self._decorator("GET", path, summary, details)

    def post(self, path: str, summary: str = "", **details: Any) -> Callable[[Handler], Handler]:
        return self._decorator("POST", path, summary, details)

    def delete(self, path: str, summary: str = "", **details: Any) -> Callable[[Handler], Handler]:
        return self._decorator("DELETE", path, summary, details)

    def _decorator(self, method: str, path: str, summary: str, details: dict[str, Any]
                   ) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self.add(method, path, handler, summary, **details)
            return handler
        return register


def openapi_document(endpoints: list[Endpoint], *, title: str, version: str, description: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        paths.setdefault(endpoint.openapi_path, {})[endpoint.method.lower()] = endpoint.operation()
    return {"openapi": "3.1.0", "info": {"title": title, "version": version, "description": description},
            "paths": paths}


def _first_line(handler: Handler) -> str:
    return (handler.__doc__ or handler.__name__.replace("_", " ")).strip().splitlines()[0]
