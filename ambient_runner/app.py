"""The ASGI application: wires settings, the selected bridge, the run manager and the HTTP API together."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import FrameType

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.applications import Starlette

from ag_ui_cli_common.json_types import JsonObject
from ambient_runner import __version__
from ambient_runner.api import capabilities as capabilities_api
from ambient_runner.api import feedback as feedback_api
from ambient_runner.api import model as model_api
from ambient_runner.api import runs as runs_api
from ambient_runner.api import status as status_api
from ambient_runner.api import tasks as tasks_api
from ambient_runner.api import workspace as workspace_api
from ambient_runner.api.access_log import AccessLogMiddleware
from ambient_runner.api.errors import EXCEPTION_HANDLERS
from ambient_runner.api.token import TokenMiddleware, is_open, security_schemes
from ambient_runner.boot import Boot, StartupExtension
from ambient_runner.bridges.contract import Bridge
from ambient_runner.logging_setup import install_redaction
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.platform.run_credentials import RunCredentials
from ambient_runner.platform.session_turns import SessionTurns
from ambient_runner.process.hardening import make_undumpable
from ambient_runner.process.supervisor import become_subreaper
from ambient_runner.runs.manager import ActiveRun, RunManager
from ambient_runner.runtime import Runtime
from ambient_runner.settings import RunnerSettings, load_settings
from ambient_runner.stream.encoding import Redactor, environment_secrets
from ambient_runner.stream.outcome import RunOutcome
from ambient_runner.tracing.setup import stop_tracing
from ambient_runner.workspace.paths import Workspace
from ambient_runner.workspace.repos import Repositories
from ambient_runner.workspace.workflows import CarriedInstructions, Workflows, WorkflowSpec

log = logging.getLogger(__name__)
ROUTERS = [status_api.routes, capabilities_api.routes, runs_api.routes, model_api.routes,
           feedback_api.routes, workspace_api.routes, tasks_api.routes]
DESCRIPTION = "Runs a coding-agent CLI and streams its work as AG-UI events."
# The instruction files the runner carries to a CLI in the preamble, those it does not read itself: Codex reads no
# AGENTS.md at all in the folders the trust rule marks untrusted. (Claude's CLAUDE.md is in its system prompt
# wherever it works; the Gemini CLI loads the workspace root's GEMINI.md itself from a workflow's folder too, as one
# of its include directories, and the folder's where it works.) An ACP agent's: its preset's (``AcpPreset.carried``).
CARRIED_INSTRUCTIONS = {"codex-sdk": CarriedInstructions(("AGENTS.md",), always=True)}


def carried_instructions(settings: RunnerSettings) -> CarriedInstructions:
    if settings.runner_type == "acp":  # imported for this runner alone (the app starts before its bridge's imports)
        from ambient_runner.bridges.acp.presets import preset_of

        preset = preset_of(settings.acp_agent)
        return preset.carried if preset is not None else CarriedInstructions()
    return CARRIED_INSTRUCTIONS.get(settings.runner_type, CarriedInstructions())


class RunnerApp(FastAPI):
    """The ASGI app: every endpoint declared with FastAPI, its OpenAPI document at ``/openapi.json`` (behind the token,
    as every call but ``/health``; no interactive docs are served)."""

    def __init__(self, runtime: Runtime, lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]]) -> None:
        super().__init__(title="ambient-runner", version=__version__, description=DESCRIPTION, lifespan=lifespan,
                         exception_handlers=dict(EXCEPTION_HANDLERS), openapi_url=None, docs_url=None,
                         redoc_url=None)
        for router in ROUTERS:
            self.include_router(router)
        self.runtime = runtime  # what every endpoint's dependencies read (``runtime_of``)
        self.add_api_route("/openapi.json", self._openapi_json, methods=["GET"], include_in_schema=False)

    def openapi(self) -> JsonObject:
        """The document, with the token's two schemes on every operation the token middleware guards."""
        if self.openapi_schema is None:
            document = get_openapi(title=self.title, version=self.version, openapi_version="3.1.0",
                                   description=self.description, routes=self.routes)
            schemes = security_schemes()
            document.setdefault("components", {})["securitySchemes"] = schemes
            for path, operations in document["paths"].items():
                for method, operation in operations.items():
                    if not is_open(method, path):
                        operation["security"] = [{name: []} for name in schemes]
            self.openapi_schema = document
        return self.openapi_schema

    async def _openapi_json(self) -> Mapping[str, object]:
        return self.openapi()


def create_app(settings: RunnerSettings | None = None, bridge: Bridge | None = None, *,
               install_signal_handlers: bool = True,
               extensions: list[StartupExtension] | None = None, freeze_after_boot: bool = False) -> RunnerApp:
    """The app. Without ``bridge``, the one ``RUNNER_TYPE`` names is imported after the server starts (``Boot``).
    ``freeze_after_boot``: the runner's own process (``Boot``'s ``freeze``)."""
    settings = settings or load_settings()
    metrics = RunnerMetrics(settings.runner_type)
    runs = RunManager(settings, bridge, Redactor([*settings.secret_values(), *environment_secrets()]), metrics)
    boot = Boot(settings, runs, bridge, list(extensions or []), freeze=freeze_after_boot)
    workspace = Workspace.of(settings.workspace_path, settings.state_dir)
    workflows = Workflows(workspace, _active_workflow(settings), carried_instructions(settings))
    runs.turn_preambles.append(workflows.instructions_for)
    runs.agent_place = workflows.place

    async def preamble_again_after_an_error(run: ActiveRun, outcome: RunOutcome | None) -> None:
        if outcome == "error":
            workflows.not_instructed(run.thread_id)

    runs.after_run_hooks.append(preamble_again_after_an_error)
    session_turns = SessionTurns(settings, runs, workflows)
    credentials = RunCredentials.for_platform(settings, runs)  # the person's connected accounts, on the platform
    runtime = Runtime(settings=settings, runs=runs, boot=boot, metrics=metrics, workspace=workspace,
                      repos=Repositories(workspace), workflows=workflows,
                      on_workflow_change=session_turns.workflow_changed, bridge=bridge)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        become_subreaper()
        make_undumpable()  # /proc/<runner>/environ (the real credentials) out of the tools' reach
        restore_signal = _install_sigterm_drain(runs) if install_signal_handlers else None
        uninstall_redaction = install_redaction(runs.redactor)  # extended in place with the bridge's credentials
        uninstall_credentials = credentials.install() if credentials is not None else None

        async def when_booted(ok: bool) -> None:
            if ok:
                await session_turns.first_turn()

        boot.start(runtime, when_booted)
        announce = asyncio.create_task(say_whether_ready(runtime), name="ready-line")
        try:
            yield
        finally:
            announce.cancel()
            await session_turns.close()
            await runs.shutdown()
            await stop_tracing(runtime.tracer, runs)
            await boot.stop(settings.runner_shutdown_grace)
            runs.close()
            if restore_signal is not None:
                restore_signal()
            if uninstall_credentials is not None:
                uninstall_credentials()
            uninstall_redaction()
            log.info("runner stopped: runs drained, state saved, CLI ended")

    app = RunnerApp(runtime, lifespan)
    app.add_middleware(TokenMiddleware, expected=lambda: _expected_token(settings))  # before routing, once
    app.add_middleware(AccessLogMiddleware)  # outermost: refused requests are logged too
    return app


async def say_whether_ready(runtime: Runtime) -> None:
    """Once booted, the one line that says the runner now serves (its URL, runner, model, workspace and state dir),
    or why it cannot take runs (what ``/ready`` answers)."""
    await runtime.boot.done.wait()
    settings = runtime.settings
    missing, details = status_api.not_ready(runtime)
    if missing or details:
        log.warning("serving on http://%s:%s, but not ready: %s", settings.agui_host, settings.agui_port,
                    "; ".join(d for d in details if d) or f"set {', '.join(missing)}")
        return
    bridge = runtime.bridge
    model = getattr(bridge, "default_model", None) or "the CLI's default"
    if settings.runner_scripted_model:
        model = f"{model} (the offline scripted model)"
    log.info("ready on http://%s:%s: runner %s, model %s, workspace %s, state dir %s", settings.agui_host,
             settings.agui_port, settings.runner_type, model, settings.workspace_path, settings.state_dir)


def _install_sigterm_drain(runs: RunManager) -> Callable[[], None] | None:
    """On SIGTERM: end active runs with their terminal event first, then let the server stop."""
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except ValueError:
        return None
    loop = asyncio.get_running_loop()

    async def drain_then_exit(sig: int, frame: FrameType | None) -> None:
        await runs.shutdown()
        if callable(previous):
            previous(sig, frame)
        else:
            raise SystemExit(128 + sig)

    def on_sigterm(sig: int, frame: FrameType | None) -> None:
        log.info("SIGTERM: draining active runs before stopping")
        loop.call_soon_threadsafe(lambda: asyncio.ensure_future(drain_then_exit(sig, frame)))

    try:
        signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread
        return None
    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def _expected_token(settings: RunnerSettings) -> str | None:
    return settings.agui_token.get_secret_value() if settings.agui_token else None


def _active_workflow(settings: RunnerSettings) -> WorkflowSpec | None:
    """The workflow the platform's init container cloned (``ACTIVE_WORKFLOW_*``), if any."""
    url = settings.active_workflow_git_url.strip()
    if not url:
        return None
    return WorkflowSpec(url, settings.active_workflow_branch.strip() or "main",
                        settings.active_workflow_path.strip().strip("/"))
