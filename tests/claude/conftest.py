"""Fixtures for the Claude bridge tests: settings in a temp dir, the bridge started with its scripted server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ambient_runner.bridges.claude.bridge import ClaudeBridge
from ambient_runner.settings import RunnerSettings
from tests.claude.helpers import make_settings


@pytest.fixture
def settings(tmp_path: Path) -> RunnerSettings:
    return make_settings(tmp_path)


@pytest.fixture
async def bridge(settings: RunnerSettings, isolated_network: None) -> AsyncIterator[ClaudeBridge]:
    bridge = ClaudeBridge(settings)
    await bridge.startup()
    try:
        yield bridge
    finally:
        await bridge.shutdown()
