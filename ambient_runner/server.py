"""Serving the app with uvicorn, with a graceful-shutdown bound below the pod's termination grace period.

SIGTERM makes the runner drain (every active run ends with its terminal event, the state is saved) and then stop:
a clean stop, so the process exits 0 (the platform's operator marks a session whose pod exits otherwise as
failed). uvicorn would re-raise the signal after its shutdown (exit 143); ``RunnerServer`` does not, nor a Ctrl-C's
SIGINT (``make run`` then ends with 0, not 130).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from ambient_runner.settings import RunnerSettings

CLEAN_STOPS = (signal.SIGTERM, signal.SIGINT)


class RunnerServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:  # the drain is done by now: a SIGTERM (the pod) or SIGINT (Ctrl-C) is not re-raised
                self._captured_signals[:] = [s for s in self._captured_signals if s not in CLEAN_STOPS]


def serve(app: Starlette, settings: RunnerSettings) -> None:
    # The runner's logging is its own (logging_setup, api/access_log): uvicorn configures none of it.
    # httptools: uvicorn's C HTTP parser (pinned in the lock), ~1 ms less of the runner's CPU a turn than h11.
    config = uvicorn.Config(app, host=settings.agui_host, port=settings.agui_port, log_config=None, log_level=None,
                            access_log=False, timeout_graceful_shutdown=int(settings.runner_shutdown_grace) + 5,
                            lifespan="on", http="httptools")
    RunnerServer(config).run()
