"""Helpers of the claude tests (constants and functions; the fixtures are in conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import runner_kits
from proctable import pid_alive

from ambient_runner.settings import RunnerSettings

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude"


def make_settings(root: Path, **overrides: object) -> RunnerSettings:
    return runner_kits.make_settings("claude", root, **overrides)


def claude_pids() -> set[int]:
    """Pids of running Claude Code processes (the bundled binary)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0", 1)[0]
        except OSError:
            continue
        if argv0.endswith(b"/claude") and pid_alive(int(entry)):
            pids.add(int(entry))
    return pids
