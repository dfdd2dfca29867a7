"""Fixtures for the Codex bridge tests: settings in a temp dir, the bridge with its scripted Responses server,
served through the real app (RunnerHarness)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from harness import RunnerHarness

from ambient_runner.bridges.codex_sdk.bridge import CodexBridge
from tests.codex.helpers import harness_for, make_settings


@pytest.fixture
def no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_AUTH_JSON_FILE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def runner(tmp_path: Path, isolated_network: None, no_openai_env: None) -> AsyncIterator[RunnerHarness]:
    bridge = CodexBridge(make_settings(tmp_path))
    async with harness_for(bridge, tmp_path) as harness:
        yield harness
