"""``GET /health``, ``/ready``, ``/metrics``, ``/mcp-status``, ``/mcp/status``."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import Request
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel
from starlette.responses import JSONResponse, Response

from ambient_runner.api.errors import ready_bridge
from ambient_runner.api.routing import Metrics, Runs, RuntimeState, Settings, router
from ambient_runner.mcp.status import platform_shape
from ambient_runner.runtime import Runtime

routes = router()
BOOT_WAIT = 30.0  # what /mcp-status waits for a runner that is still starting


class Health(BaseModel):
    status: str
    runnerType: str  # noqa: N815 - the wire's name


class Readiness(BaseModel):
    ready: bool
    missing: list[str] = []
    detail: str = ""


@routes.get("/health", response_model=Health)
async def health(settings: Settings) -> Health:
    """Liveness: 200 while the process serves; the one call that needs no token."""
    return Health(status="ok", runnerType=settings.runner_type)


@routes.get("/ready", response_model=Readiness, response_model_exclude_defaults=True,
            responses={503: {"model": Readiness, "description": "not ready, and why"}})
async def ready(runtime: RuntimeState) -> JSONResponse:
    """Readiness: 200 only when the CLI/SDK is present, credentials are configured and the runner is not draining.
    The detail may carry what a CLI printed when it could not start: redacted, as every event is."""
    missing, details = not_ready(runtime)
    if missing or details:
        detail = runtime.runs.redactor("; ".join(d for d in details if d))
        return JSONResponse({"ready": False, "missing": missing, "detail": detail}, status_code=503)
    return JSONResponse({"ready": True})


def not_ready(runtime: Runtime) -> tuple[list[str], list[str]]:
    """Why the runner cannot take runs: (the variables to set, what is wrong in words); both empty when ready."""
    missing: list[str] = []
    details: list[str] = []
    booting = runtime.boot.not_ready_reason()
    if booting:
        details.append(booting)
    if runtime.bridge is not None:
        readiness = runtime.bridge.readiness()
        if not readiness.ready:
            missing += readiness.missing
            details.append(readiness.detail)
    for check in runtime.readiness_checks:
        problem = check()
        if problem:
            details.append(problem)
    if runtime.runs.draining:
        details.append("the runner is shutting down")
    return missing, details


@routes.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "the metrics"}})
async def metrics(metrics: Metrics) -> Response:
    return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)


async def mcp_servers(request: Request, runs: Runs) -> list[dict[str, object]]:
    """The bridge's MCP servers, each ``detail`` redacted (a server's own words: its stderr, its errors)."""
    bridge = await ready_bridge(request, BOOT_WAIT)
    return [{**server, "detail": runs.redactor(str(server["detail"]))} if server.get("detail") else server
            for server in await bridge.mcp_status()]


@routes.get("/mcp-status", summary="The MCP servers and their tools")
async def mcp_status(request: Request, runs: Runs) -> Mapping[str, object]:
    return {"servers": await mcp_servers(request, runs)}


@routes.get("/mcp/status")
async def mcp_status_for_the_platform(request: Request, runs: Runs) -> Mapping[str, object]:
    """The platform backend's MCP panel call: the same servers in its shape and status words."""
    return platform_shape(await mcp_servers(request, runs))
