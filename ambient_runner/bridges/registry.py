"""RUNNER_TYPE -> bridge class, imported lazily so only the selected bridge's dependencies load."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ambient_runner.bridges.host import BridgeHost
from ambient_runner.settings import RunnerSettings

if TYPE_CHECKING:
    from ambient_runner.bridges.base import CliBridge

BRIDGES = {
    "claude": "ambient_runner.bridges.claude.bridge:ClaudeBridge",
    "gemini-cli": "ambient_runner.bridges.gemini_cli.bridge:GeminiCliBridge",
    "codex-sdk": "ambient_runner.bridges.codex_sdk.bridge:CodexBridge",
    "acp": "ambient_runner.bridges.acp.bridge:AcpBridge",
}


def bridge_class(runner_type: str) -> type[CliBridge]:
    module_name, _, class_name = BRIDGES[runner_type].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def create_bridge(settings: RunnerSettings, host: BridgeHost | None = None) -> CliBridge:
    """The bridge ``RUNNER_TYPE`` names, given the run manager's host (``RunManager.host``)."""
    return bridge_class(settings.runner_type)(settings, host)
