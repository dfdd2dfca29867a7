"""Shared fixtures for the deploy/ checks: the kustomize output, the registry, the renderer module."""

from __future__ import annotations

import importlib.util
import json
import sys
from types import ModuleType
from typing import Any

import pytest

from tests.deploy.helpers import DEPLOY, kustomize


@pytest.fixture(scope="session")
def rendered() -> list[dict[str, Any]]:
    return kustomize()


@pytest.fixture(scope="session")
def registry() -> list[dict[str, Any]]:
    return json.loads((DEPLOY / "agent-registry.json").read_text())


@pytest.fixture(scope="session")
def render() -> ModuleType:
    """deploy/render.py, imported from its path (deploy/ is not a package)."""
    spec = importlib.util.spec_from_file_location("deploy_render", DEPLOY / "render.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
