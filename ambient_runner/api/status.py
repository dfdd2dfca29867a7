"""``GET /health``, ``/ready``, ``/capabilities``, ``/metrics``, ``/mcp-status``."""

from __future__ import annotations

from ag_ui.core import PROTOCOL_VERSION
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from ambient_runner.api.errors import ready_bridge
from ambient_runner.mcp.status import platform_shape
from ambient_runner.platform.state_dir import synced_by_platform

router = APIRouter()
BOOT_WAIT = 30.0  # what /capabilities and /mcp-status wait for a runner that is still starting


@router.get("/health")
async def health(request: Request) -> JSONResponse:
    """Liveness: 200 while the process serves."""
    return JSONResponse({"status": "ok", "runnerType": request.app.state.settings.runner_type})


@router.get("/ready")
async def ready(request: Request) -> JSONResponse:
    """Readiness: 200 only when the CLI/SDK is present, credentials are configured and the runner is not draining."""
    app_state = request.app.state
    missing: list[str] = []
    details: list[str] = []
    booting = app_state.boot.not_ready_reason()
    if booting:
        details.append(booting)
    if app_state.bridge is not None:
        readiness = app_state.bridge.readiness()
        if not readiness.ready:
            missing += readiness.missing
            details.append(readiness.detail)
    for check in app_state.readiness_checks:
        problem = check()
        if problem:
            details.append(problem)
    if app_state.runs.draining:
        details.append("the runner is shutting down")
    if missing or details:
        return JSONResponse({"ready": False, "missing": missing, "detail": "; ".join(d for d in details if d)},
                            status_code=503)
    return JSONResponse({"ready": True})


# The platform's names for what its UI can use, by the route that serves it (its reference runner derives the list
# the same way).
PLATFORM_FEATURES = {"/feedback": "feedback", "/mcp/status": "mcp_diagnostics", "/model": "model_switch",
                     "/interrupt": "interrupt", "/repos/add": "repos", "/workflow": "workflows",
                     "/tasks": "background_tasks"}


def _paths(request: Request) -> dict[str, dict[str, object]]:
    """The app's routes, from its OpenAPI document (public, built once and cached by FastAPI)."""
    return request.app.openapi().get("paths", {})


@router.get("/capabilities")
async def capabilities(request: Request) -> JSONResponse:
    bridge = await ready_bridge(request, BOOT_WAIT)
    settings = request.app.state.settings
    native = bridge.capabilities()
    caps = native.model_dump(by_alias=True, exclude_none=True)
    paths = _paths(request)
    caps.update({
        "protocolVersion": PROTOCOL_VERSION,
        "replay": True,
        "endpoints": [f"{method.upper()} {path}" for path, methods in paths.items() for method in methods],
        # The platform's fields (its UI shows the agent by matching framework against the registry id).
        "agent_features": ["agentic_chat", "backend_tool_rendering", *(["thinking"] if native.reasoning else [])],
        "platform_features": sorted(name for path, name in PLATFORM_FEATURES.items() if path in paths),
        "file_system": "/content/list" in paths,
        "tracing": None,
        "session_persistence": bool(settings.state_store_url) or synced_by_platform(settings),
        "model": native.default_model,
        "session_id": settings.session_id,
    })
    return JSONResponse(caps)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE_LATEST)


@router.get("/mcp-status")
async def mcp_status(request: Request) -> JSONResponse:
    bridge = await ready_bridge(request, BOOT_WAIT)
    return JSONResponse({"servers": await bridge.mcp_status()})


@router.get("/mcp/status")
async def mcp_status_for_the_platform(request: Request) -> JSONResponse:
    """The platform backend's MCP panel call: the same servers in its shape and status words."""
    bridge = await ready_bridge(request, BOOT_WAIT)
    return JSONResponse(platform_shape(await bridge.mcp_status()))
