"""Fixtures for the Gemini CLI bridge tests: settings in a temp dir, the bridge with its scripted server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.settings import RunnerSettings
from tests.gemini.helpers import make_settings


@pytest.fixture
def settings(tmp_path: Path, request: pytest.FixtureRequest) -> RunnerSettings:
    for name in ("transport", "one_attempt"):  # the variables they set are read into the settings: first
        if name in request.fixturenames:
            request.getfixturevalue(name)
    return make_settings(tmp_path)


@pytest.fixture(params=["acp", "stream-json"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """GEMINI_TRANSPORT for the test's bridge: each test that uses it runs on both."""
    monkeypatch.setenv("GEMINI_TRANSPORT", request.param)
    return str(request.param)


@pytest.fixture
def one_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Errors fail after one request (production default: 3 attempts with backoff)."""
    monkeypatch.setenv("GEMINI_CLI_MAX_ATTEMPTS", "1")


@pytest.fixture
async def bridge(settings: RunnerSettings, isolated_network: None, one_attempt: None,
                 request: pytest.FixtureRequest) -> AsyncIterator[GeminiCliBridge]:
    bridge = GeminiCliBridge(settings)
    assert bridge.max_attempts == 1
    if "transport" in request.fixturenames:  # each transport case runs on its own transport
        assert bridge.transport == request.getfixturevalue("transport")
    await bridge.startup()
    try:
        yield bridge
    finally:
        await bridge.shutdown()
