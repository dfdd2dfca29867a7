"""The app extension that wires state sync into the runner's lifecycle (``state_extensions`` makes it).

* At startup, before ``bridge.startup()``: hydrate the state dir from ``STATE_STORE_URL``. A store that cannot
  be reached makes ``/ready`` answer 503 naming the store (the process keeps serving ``/health``).
* After every run (``RunManager.after_run_hooks``) and every ``RUNNER_SYNC_INTERVAL`` seconds while a run is
  active: sync.
* At shutdown (after the run manager has ended the active runs): one final sync, bounded by
  ``RUNNER_SYNC_TIMEOUT``; if it fails, an error naming the store is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ambient_runner.settings import RunnerSettings
from ambient_runner.state.host import StateHost
from ambient_runner.state.store import StateStore, StoreError, open_store
from ambient_runner.state.sync import RETRY_DELAYS, StateSync
from ambient_runner.stream.outcome import RunOutcome
from ambient_runner.tracing.setup import operation

log = logging.getLogger(__name__)


class StateSyncExtension:
    def __init__(self, settings: RunnerSettings, *, store: StateStore | None = None,
                 retry_delays: tuple[float, ...] = RETRY_DELAYS) -> None:
        self.settings = settings
        self.store = store or open_store(settings.state_store_url, settings.s3)
        self.retry_delays = retry_delays
        self.sync: StateSync | None = None

    async def __call__(self, runtime: StateHost) -> Callable[[], Awaitable[None]]:  # the final sync, at shutdown
        settings = self.settings
        bridge = runtime.bridge
        assert bridge is not None  # Boot runs the extensions once it has the bridge
        runs = runtime.runs
        sync = StateSync(self.store, settings.state_dir, lambda: bridge.state_files().left_out,
                         record=runtime.metrics.state_sync, retry_delays=self.retry_delays)
        self.sync = sync
        runtime.readiness_checks.append(lambda: sync.problem)
        log.info("state sync: %s <-> %s (every %g s while a run is active, after each run, at shutdown)",
                 settings.state_dir, self.store.url, settings.runner_sync_interval)
        with contextlib.suppress(StoreError):  # logged, and /ready reports it
            await sync.hydrate()

        async def after_run(run: object, outcome: RunOutcome | None) -> None:
            if not runs.draining:  # the shutdown sync follows
                with operation(runtime.tracer, "ambient.state_sync", run, store=self.store.url):
                    await sync.sync(f"after run {getattr(run, 'run_id', '?')}")

        runs.after_run_hooks.append(after_run)
        stop = asyncio.Event()
        periodic = asyncio.create_task(
            sync.run_periodically(settings.runner_sync_interval, lambda: bool(runs.active_runs()), stop),
            name="state-sync-periodic")

        async def cleanup() -> None:
            stop.set()
            try:
                async with asyncio.timeout(settings.runner_sync_timeout):
                    await asyncio.shield(periodic)
            except (TimeoutError, Exception):  # noqa: BLE001 - the final sync below still runs
                log.warning("state sync: the periodic sync did not stop in time")
            await sync.final_sync(settings.runner_sync_timeout)

        return cleanup
