"""The runner as its own process, with the stateful fake CLI: settings from the environment (like main.py), state
sync from STATE_STORE_URL, real SIGTERM handling. Used by the tests that stop or kill a runner."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "support"), str(HERE.parents[1])]

from ambient_runner.app import create_app  # noqa: E402
from ambient_runner.logging_setup import configure_logging  # noqa: E402
from ambient_runner.server import serve  # noqa: E402
from ambient_runner.settings import load_settings  # noqa: E402
from ambient_runner.state.extension import state_extensions  # noqa: E402
from tests.state.state_fakes import StatefulFakeBridge  # noqa: E402

settings = load_settings()
configure_logging(settings.runner_log_level)
serve(create_app(settings, StatefulFakeBridge(settings), extensions=state_extensions(settings)), settings)
