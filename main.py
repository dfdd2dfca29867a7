"""Entry point: ``uvicorn main:app`` (or ``python main.py``) serves the runner selected by ``RUNNER_TYPE``.

Only the selected bridge's dependencies are imported. A bad setting stops the process at start with one line
naming the variable and what it accepts.
"""

from __future__ import annotations

from ambient_runner.app import create_app
from ambient_runner.logging_setup import configure_logging
from ambient_runner.server import serve
from ambient_runner.settings import load_settings
from ambient_runner.state.extension import state_extensions

settings = load_settings()
configure_logging(settings.runner_log_level)
app = create_app(settings, extensions=state_extensions(settings))

if __name__ == "__main__":
    serve(app, settings)
