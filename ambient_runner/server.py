"""Serving the app with uvicorn, with a graceful-shutdown bound below the pod's termination grace period."""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI

from ambient_runner.settings import RunnerSettings


def serve(app: FastAPI, settings: RunnerSettings) -> None:
    config = uvicorn.Config(app, host=settings.agui_host, port=settings.agui_port, log_level=settings.runner_log_level,
                            timeout_graceful_shutdown=int(settings.runner_shutdown_grace) + 5, lifespan="on")
    uvicorn.Server(config).run()
