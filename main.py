"""Entry point: ``uvicorn main:app`` (or ``python main.py``) serves the runner selected by ``RUNNER_TYPE``.

Only the selected bridge's dependencies are imported. A bad setting stops the process at start with one line
naming the variable and what it accepts, before the app's own imports (a runner image started as another runner
says at once which image it needs); a platform variable the runner cannot use is a warning instead.
"""

from __future__ import annotations

import os

from ambient_runner.platform.env import apply_platform_env, report
from ambient_runner.settings import load_settings

platform_env = apply_platform_env(os.environ)  # the platform operator's variables, in the runner's terms
settings = load_settings()

from ambient_runner.app import create_app  # noqa: E402 - after the settings, see above
from ambient_runner.logging_setup import configure_logging  # noqa: E402
from ambient_runner.server import serve  # noqa: E402
from ambient_runner.state.extension import state_extensions  # noqa: E402

configure_logging(settings.runner_log_level)
report(platform_env)
app = create_app(settings, extensions=state_extensions(settings), freeze_after_boot=True)

if __name__ == "__main__":
    serve(app, settings)
