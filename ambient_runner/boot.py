"""Boot: what the runner does after it starts serving, so ``/health`` answers at once.

Importing a bridge's SDK (the Codex and Claude SDKs take hundreds of milliseconds), restoring the state dir from the
store (seconds for a large state) and preparing the CLI happen in one background task. Until it is done ``/ready``
answers 503 ("starting"), and ``/run`` waits for it (bounded). A failure is reported by ``/ready``; the process keeps
serving so the platform can read why.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.bridges.contract import Bridge
from ambient_runner.bridges.registry import create_bridge
from ambient_runner.platform.state_dir import keep_credentials_out
from ambient_runner.runs.manager import RunManager
from ambient_runner.settings import RunnerSettings
from ambient_runner.stream.encoding import environment_secrets
from ambient_runner.tracing.setup import operation, start_tracing, trace_model_requests

if TYPE_CHECKING:
    from ambient_runner.tracing.tracer import RunTracer

log = logging.getLogger(__name__)

Cleanup = Callable[[], Awaitable[None]]
StartupExtension = Callable[[Any], Awaitable[Cleanup | None]]  # given the runtime (``ambient_runner.runtime``)


class Slots(Protocol):
    """What Boot fills in once it has them: the runtime's bridge and tracer."""

    bridge: Bridge | None
    tracer: RunTracer | None


class BootError(RunnerError, RuntimeError):
    """The runner has not started (yet, or at all): the message says which."""

    code = ErrorCode.NOT_READY


class Boot:
    def __init__(self, settings: RunnerSettings, runs: RunManager, bridge: Bridge | None,
                 extensions: list[StartupExtension], *, freeze: bool = False) -> None:
        """``freeze``: once booted, what start-up built (modules, the app; the SDK a bridge imports after ``/ready``
        once that is in), which lives as long as the process, leaves the collector's generations (``gc.freeze``),
        so a full collection walks only what runs made (a ~90 ms pause every few hundred turns before;
        docs/performance.md). For the runner's own process: in a process that builds many apps (the tests) it would
        also keep their uncollected garbage for good."""
        self.settings = settings
        self.freeze = freeze
        self.runs = runs
        self.bridge = bridge
        self.extensions = extensions
        self.cleanups: list[Cleanup] = []
        self.stage = "starting"
        self.problem: str | None = None
        self.done = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def start(self, runtime: Slots, after: Callable[[bool], Awaitable[None]]) -> None:
        """Boot in the background: ``runtime`` gets the bridge and the tracer, and is what each extension is
        given."""
        self.task = asyncio.create_task(self._boot(runtime, after), name="runner-boot")

    async def _boot(self, runtime: Slots, after: Callable[[bool], Awaitable[None]]) -> None:
        try:
            if self.bridge is None:
                self.stage = f"loading the {self.settings.runner_type} bridge"
                self.bridge = await asyncio.to_thread(create_bridge, self.settings, self.runs.host)
            leak = keep_credentials_out(self.settings, self.bridge)
            if leak is not None:  # no run may write a credential file the platform would upload
                self.bridge = None
                raise BootError(leak)
            runtime.bridge = self.bridge
            self.runs.use(self.bridge)
            self.stage = "connecting the trace destinations"
            tracer = runtime.tracer = await start_tracing(self.settings, self.runs)
            self.stage = "restoring the state dir"
            for extension in self.extensions:
                cleanup = await extension(runtime)
                if cleanup is not None:
                    self.cleanups.append(cleanup)
            self.stage = "preparing the agent CLI"
            try:
                with operation(tracer, "ambient.cli_start", runner=self.settings.runner_type):
                    await self.bridge.startup()
            except Exception as exc:  # keep serving: /ready says what is wrong
                log.exception("bridge startup failed")
                self.problem = f"bridge startup failed: {exc}"
            trace_model_requests(tracer, self.bridge)
            proxy = self.bridge.model_proxy
            if proxy is not None:
                proxy.observer = self.runs.metrics.model_upstream
            self.runs.redactor.extend([*self.bridge.secret_values(), *(proxy.secrets() if proxy is not None else ()),
                                       *environment_secrets()])  # the one redactor, now with the bridge's too
            await after(self.problem is None)
        except BootError as exc:
            log.error("the runner cannot serve runs: %s", exc)
            self.problem = str(exc)
        except Exception as exc:
            log.exception("runner start-up failed")
            self.problem = f"start-up failed while {self.stage}: {exc}"
        finally:
            self.stage = "ready"
            if self.freeze:
                gc.freeze()
            self.done.set()
        if self.freeze and self.bridge is not None:
            await self._freeze_once_loaded(self.bridge)

    @staticmethod
    async def _freeze_once_loaded(bridge: Bridge) -> None:
        """What the bridge imports after ``/ready`` (its SDK, in a thread: ``bridges.lazy``) leaves the collector's
        generations too once it is in. Frozen with start-up's objects it would not be (the import ends later): the
        Claude and Codex SDKs left 52,000-62,000 objects there, and a full collection took 17-30 ms, inside a turn
        (0.5-0.8 ms with them frozen; docs/performance.md)."""
        if bridge.sdk is not None:
            await bridge.sdk.settled()
        gc.freeze()

    def not_ready_reason(self) -> str | None:
        if not self.done.is_set():
            return f"starting: {self.stage}"
        return self.problem

    async def ready_bridge(self, within: float) -> Bridge:
        """The bridge once boot is done; ``BootError`` when it failed or takes longer than ``within`` s."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self.done.wait()
        if not self.done.is_set():
            raise BootError(f"the runner is still starting ({self.stage}); try again in a moment")
        if self.bridge is None:
            raise BootError(self.problem or "the runner failed to start")
        return self.bridge

    async def stop(self, shutdown_grace: float) -> None:
        """Cancel an unfinished boot, run the extensions' cleanups (final state sync), shut the bridge down."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        for cleanup in reversed(self.cleanups):
            with contextlib.suppress(Exception):
                await cleanup()
        if self.bridge is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(shutdown_grace):
                    await self.bridge.shutdown()
