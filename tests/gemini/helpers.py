"""Helpers of the gemini tests (constants and functions; the fixtures are in conftest.py)."""

from __future__ import annotations

from pathlib import Path

import runner_kits

from ambient_runner.settings import RunnerSettings

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini"


def make_settings(root: Path, **overrides: object) -> RunnerSettings:
    return runner_kits.make_settings("gemini-cli", root, **overrides)
