"""Serving the app with uvicorn, with a graceful-shutdown bound below the pod's termination grace period.

SIGTERM makes the runner drain (every active run ends with its terminal event, the state is saved) and then stop:
a clean stop, so the process exits 0 (the platform's operator marks a session whose pod exits otherwise as
failed). uvicorn would re-raise the signal after its shutdown (exit 143); ``RunnerServer`` does not.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from ambient_runner.settings import RunnerSettings


class RunnerServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:  # the drain is done by now: a SIGTERM is not re-raised
                self._captured_signals[:] = [s for s in self._captured_signals if s != signal.SIGTERM]


def serve(app: Starlette, settings: RunnerSettings) -> None:
    config = uvicorn.Config(app, host=settings.agui_host, port=settings.agui_port, log_level=settings.runner_log_level,
                            timeout_graceful_shutdown=int(settings.runner_shutdown_grace) + 5, lifespan="on")
    RunnerServer(config).run()
