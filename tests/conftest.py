"""Test session set-up: every test runs inside a network namespace that has only loopback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "support"))

import netns  # noqa: E402

NETWORK_PROBLEM: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    global NETWORK_PROBLEM
    # Done before any thread or subprocess starts, so everything the tests start inherits the namespace.
    NETWORK_PROBLEM = netns.isolate_network()
    config.addinivalue_line("markers", "real_cli: starts a real agent CLI (needs network isolation)")
    config.addinivalue_line("markers", "slow: slow test (make test-slow)")


@pytest.fixture
def isolated_network() -> None:
    """Use in every test that starts a real CLI: it must not run with a route off the machine."""
    if NETWORK_PROBLEM is None and netns.is_isolated():
        return
    why = NETWORK_PROBLEM or f"interfaces {netns.interfaces()}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"real-CLI test cannot isolate the network: {why}")
    pytest.skip(f"cannot isolate the network: {why}")
