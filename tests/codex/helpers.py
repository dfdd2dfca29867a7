"""Helpers of the codex tests (constants and functions; the fixtures are in conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

from harness import RunnerHarness
from proctable import pid_alive

from ambient_runner.bridges.codex_sdk.bridge import CodexBridge
from ambient_runner.process import proc_stat
from ambient_runner.settings import RunnerSettings


def settings_values(root: Path, **overrides: object) -> dict[str, object]:
    values: dict[str, object] = {"runner_type": "codex-sdk", "workspace_path": root / "workspace",
                                 "runner_state_root": root / "state", "runner_scripted_model": True}
    values.update(overrides)
    return values


def make_settings(root: Path, **overrides: object) -> RunnerSettings:
    settings = RunnerSettings(**settings_values(root, **overrides))  # type: ignore[arg-type]
    settings.workspace_path.mkdir(parents=True, exist_ok=True)
    return settings


def harness_for(bridge: CodexBridge, root: Path, **overrides: object) -> RunnerHarness:
    return RunnerHarness(bridge, **settings_values(root, **overrides))


def codex_processes(under: int | None = None) -> list[tuple[int, str]]:
    """(pid, cmdline) of every live process running the bundled codex binary; ``under``: only that process's
    descendants (a test's own: what another suite on the machine runs meanwhile is not its business)."""
    found = []
    mine = None if under is None else {stat.pid for stat in proc_stat.descendants(under)}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or (mine is not None and int(entry) not in mine):
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if pid_alive(int(entry)) and argv and argv[0].endswith(b"codex_cli_bin/bin/codex"):
            found.append((int(entry), b" ".join(argv).decode(errors="replace")))
    return found
