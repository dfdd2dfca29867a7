"""``GET /capabilities``: AG-UI 1.0 ``AgentCapabilities``, our own fields under its ``custom`` key, and beside them
the nine top-level fields the platform's backend and UI read (``framework``, ``agent_features``, ...)."""

from __future__ import annotations

from collections.abc import Mapping

from ag_ui.core import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    ExecutionCapabilities,
    HumanInTheLoopCapabilities,
    IdentityCapabilities,
    MultiAgentCapabilities,
    MultimodalCapabilities,
    MultimodalInputCapabilities,
    ReasoningCapabilities,
    StateCapabilities,
    ToolsCapabilities,
    TransportCapabilities,
)
from fastapi import Request

from ambient_runner import __version__
from ambient_runner.api.errors import ready_bridge
from ambient_runner.api.routing import Settings, router
from ambient_runner.bridges.contract import Capabilities
from ambient_runner.platform.state_dir import synced_by_platform
from ambient_runner.runs.busy import modes as busy_modes
from ambient_runner.runtime import runtime_of
from ambient_runner.settings import RunnerSettings

routes = router()
BOOT_WAIT = 30.0  # s /capabilities waits for a runner that is still starting
Paths = Mapping[str, Mapping[str, object]]  # /openapi.json's paths: each path's operations by method

# The platform's names for what its UI can use, by the route that serves it (its reference runner derives the list
# the same way).
PLATFORM_FEATURES = {"/feedback": "feedback", "/mcp/status": "mcp_diagnostics", "/model": "model_switch",
                     "/interrupt": "interrupt", "/repos/add": "repos", "/workflow": "workflows",
                     "/tasks": "background_tasks"}
# The platform's top-level fields (its UI's type): the only keys beside AG-UI's own.
PLATFORM_FIELDS = ("framework", "agent_features", "platform_features", "file_system", "mcp", "tracing",
                   "session_persistence", "model", "session_id")


def agent_capabilities(native: Capabilities, settings: RunnerSettings, endpoints: list[str]) -> AgentCapabilities:
    """What this runner supports, in AG-UI's categories; what AG-UI has no category for goes under ``custom``."""
    mime_types = native.input_mime_types
    return AgentCapabilities(
        identity=IdentityCapabilities(name=f"ambient-runner ({native.runner_type})", type=native.framework,
                                      version=__version__, provider="ambient-code"),
        transport=TransportCapabilities(streaming=True, resumable=True),  # GET /events/{thread}?after=<seq>
        tools=ToolsCapabilities(supported=native.tool_calls, client_provided=native.client_tools),
        state=StateCapabilities(snapshots=native.state_snapshots, deltas=native.state_deltas,
                                persistent_state=False),
        multi_agent=MultiAgentCapabilities(supported=native.subagents, delegation=native.subagents),
        reasoning=ReasoningCapabilities(supported=native.reasoning, streaming=native.reasoning),
        multimodal=MultimodalCapabilities(input=MultimodalInputCapabilities(
            image=any(t.startswith("image/") for t in mime_types), pdf="application/pdf" in mime_types,
            audio=False, video=False, file=False)),
        execution=ExecutionCapabilities(code_execution=True, sandboxed=False,
                                        max_execution_time=int(settings.runner_run_timeout * 1000)),
        human_in_the_loop=HumanInTheLoopCapabilities(supported=native.interrupt, interventions=native.interrupt,
                                                     feedback=True, approvals=native.approvals,
                                                     interrupts=native.approvals, approve_with_edits=False),
        custom={
            "runnerType": native.runner_type,
            "protocolVersion": PROTOCOL_VERSION,
            "replay": True,
            "interrupt": native.interrupt,
            "resume": native.resume,
            "mcp": native.mcp,
            "defaultModel": native.default_model,
            "models": native.models,
            "options": [o.model_dump(by_alias=True, exclude_none=True) for o in native.options],
            **({"agent": native.agent} if native.agent is not None else {}),
            "attachments": {"mimeTypes": mime_types, "maxBytes": settings.runner_max_attachment_bytes,
                            "sources": ["data", "url:file"] + (["url:http"] if settings.runner_fetch_urls else [])},
            "endpoints": endpoints,
            # A message posted while the thread's run streams (forwardedProps.whenBusy): its default first.
            "whenBusy": {"modes": [m.value for m in busy_modes(native.steering)],
                         "maxQueued": settings.runner_max_queued},
            "approvals": {"policies": ["auto", "ask"] if native.approvals else ["auto"],
                          "defaultPolicy": settings.runner_approval_policy,
                          "interruptTimeoutSeconds": settings.runner_interrupt_timeout,
                          "answerForms": ["resume", "forwardedProps.resume", "toolMessage"] if native.approvals
                          else []},
        },
    )


def platform_fields(native: Capabilities, settings: RunnerSettings, paths: Paths) -> dict[str, object]:
    """The fields the platform reads (its UI shows the agent by matching ``framework`` against the registry id)."""
    return {
        "framework": native.framework,
        "agent_features": ["agentic_chat", "backend_tool_rendering", *(["thinking"] if native.reasoning else [])],
        "platform_features": sorted(name for path, name in PLATFORM_FEATURES.items() if path in paths),
        "file_system": "/content/list" in paths,
        "mcp": native.mcp,
        "tracing": None,
        "session_persistence": bool(settings.state_store_url) or synced_by_platform(settings),
        "model": native.default_model,
        "session_id": settings.session_id,
    }


def capabilities_body(native: Capabilities, settings: RunnerSettings, paths: Paths,
                      tracing: list[str] | None = None) -> dict[str, object]:
    """The whole answer: AG-UI's ``AgentCapabilities`` (camelCase, no empty fields) and the platform's fields.
    ``tracing``: the trace destinations in use (``otlp``, ``langfuse``, ``mlflow``)."""
    endpoints = [f"{method.upper()} {path}" for path, methods in paths.items() for method in methods]
    body = agent_capabilities(native, settings, endpoints).model_dump(mode="json", by_alias=True,
                                                                      exclude_none=True)
    body["custom"]["tracing"] = {"destinations": tracing or [], "content": settings.runner_trace_content}
    return body | platform_fields(native, settings, paths) | {"tracing": ",".join(tracing) if tracing else None}


@routes.get("/capabilities", summary="What this runner and its agent can do (AG-UI AgentCapabilities)")
async def capabilities(request: Request, settings: Settings) -> Mapping[str, object]:
    """AG-UI 1.0 ``AgentCapabilities`` (our own fields under ``custom``) and the platform's top-level fields."""
    bridge = await ready_bridge(request, BOOT_WAIT)
    paths = request.app.openapi()["paths"]
    tracer = runtime_of(request).tracer
    tracing = [d.name for d in tracer.destinations] if tracer is not None else None
    return capabilities_body(bridge.capabilities(), settings, paths, tracing)
