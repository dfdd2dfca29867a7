"""The image smoke check, run here on the host's runner: deploy/image/smoke_client.py starts `python main.py` on the
offline scripted model, runs the pod template's readiness probe command with AGUI_TOKEN set, completes one run
and stops the runner with SIGTERM (`make image-smoke` does the same inside the built image)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from tests.deploy.helpers import DEPLOY, ROOT


def readiness_probe() -> list[str]:
    pod = yaml.safe_load((DEPLOY / "runner-pod-template.yaml").read_text())
    return pod["template"]["spec"]["containers"][0]["readinessProbe"]["exec"]["command"]


# What `make image-smoke` runs in each image kind: a runner type (and for the ACP runner, its agent).
IMAGE_RUNNERS = [pytest.param({"RUNNER_TYPE": "gemini-cli"}, id="gemini-cli"),
                 pytest.param({"RUNNER_TYPE": "acp", "ACP_AGENT": "opencode"}, id="acp-opencode")]


@pytest.mark.real_cli
@pytest.mark.parametrize("runner", IMAGE_RUNNERS)
def test_smoke_client_with_the_pods_readiness_probe(runner, isolated_network, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env.update(runner, RUNNER_SCRIPTED_MODEL="true", AGUI_TOKEN="smoke-token",
               AGUI_HOST="127.0.0.1", AGUI_PORT="8001", WORKSPACE_PATH=str(tmp_path / "workspace"),
               RUNNER_STATE_ROOT=str(tmp_path / "state"), PATH=f"{os.path.dirname(sys.executable)}:{env['PATH']}")
    (tmp_path / "workspace").mkdir()
    result = subprocess.run([sys.executable, str(DEPLOY / "image" / "smoke_client.py"), "--start-runner",
                             "--probe", json.dumps(readiness_probe()), "--timeout", "120"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ok"], (report, result.stderr[-3000:])
    assert report["readinessProbeExit"] == 0 and report["first"] == ["RUN_STARTED"]
    assert report["terminal"] == "RUN_FINISHED" and report["toolCalls"] >= 1


@pytest.mark.real_cli
@pytest.mark.parametrize("runner", IMAGE_RUNNERS)
def test_coldstart_reports_the_start_the_first_run_and_the_memory(runner, isolated_network, tmp_path):
    """deploy/image/coldstart.py as `make image-smoke` runs it in the image (here on the host's runner): the times to
    /health, /ready and the first text, the runner's memory with and without the CLI it keeps, a clean SIGTERM."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env.update(runner, RUNNER_SCRIPTED_MODEL="true", AGUI_HOST="127.0.0.1", AGUI_PORT="8001",
               WORKSPACE_PATH=str(tmp_path / "workspace"), RUNNER_STATE_ROOT=str(tmp_path / "state"))
    (tmp_path / "workspace").mkdir()
    result = subprocess.run([sys.executable, str(DEPLOY / "image" / "coldstart.py"), "--timeout", "120"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ok"], (report, result.stderr[-3000:])
    assert 0 < report["healthSeconds"] <= report["readySeconds"] < report["firstTextSeconds"]
    assert report["terminal"] == "RUN_FINISHED" and report["toolCalls"] >= 1 and report["sigtermExit"] == 0
    for memory in (report["rssAtReady"], report["rssIdleAfterRun"]):
        # the live `gemini --acp` / `opencode acp` is the runner's child: counted with the children only
        assert 0 < memory["runnerMiB"] < memory["withChildrenMiB"] - 50


@pytest.mark.real_cli
def test_readiness_probe_fails_without_the_token(isolated_network, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env.update(RUNNER_TYPE="codex-sdk", RUNNER_SCRIPTED_MODEL="true", AGUI_TOKEN="the-real-token",
               AGUI_HOST="127.0.0.1", AGUI_PORT="8001", WORKSPACE_PATH=str(tmp_path / "workspace"),
               RUNNER_STATE_ROOT=str(tmp_path / "state"))
    (tmp_path / "workspace").mkdir()
    runner = subprocess.Popen([sys.executable, "main.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        probe = readiness_probe()
        ready = subprocess.run([sys.executable, "-c", "import time, urllib.request as r\n"
                                "for _ in range(200):\n"
                                "    try: r.urlopen('http://127.0.0.1:8001/health', timeout=2); break\n"
                                "    except OSError: time.sleep(0.2)\n"
                                "else: raise SystemExit('the runner never answered /health')\n"],
                               timeout=120, check=False)
        assert ready.returncode == 0
        probe_env = {**env, "PATH": f"{os.path.dirname(sys.executable)}:{env['PATH']}"}
        for _ in range(120):  # like the kubelet, probe until ready: the runner boots after /health answers
            with_token = subprocess.run(probe, env=probe_env, capture_output=True, timeout=60, check=False)
            if with_token.returncode == 0:
                break
            time.sleep(0.5)
        wrong = subprocess.run(probe, env={**probe_env, "AGUI_TOKEN": "wrong"}, capture_output=True, timeout=60,
                               check=False)
        assert with_token.returncode == 0, with_token.stderr
        assert wrong.returncode != 0 and b"401" in wrong.stderr
    finally:
        runner.terminate()
        runner.wait(timeout=60)
