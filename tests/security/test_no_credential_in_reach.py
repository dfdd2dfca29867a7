"""The agent never holds the real credential: with the runner started as a non-root user (as in the pod), a tool
that dumps its environment, reads every file of the state dir and every ``/proc/*/environ`` and ``cmdline`` it can
finds no real key, for each real runner, while the scripted model server receives it (through the model proxy).
The runner's own environment (which holds the key) is out of the tool's reach: the runner is not dumpable."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness import check_stream
from runner_process import free_port, wait_ready
from runners import API_KEYS, OTHER_CREDENTIALS, RUNNERS, SERVERS, provider_environment

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]
ROOT = Path(__file__).resolve().parents[2]
SITE_PACKAGES = next((ROOT / ".venv" / "lib").glob("python3*/site-packages"))
SYSTEM_PYTHON = shutil.which("python3.11", path="/usr/bin:/usr/local/bin")
USER = 1001
COLLECT = """
import base64, glob, os, sys
state, key = sys.argv[1], base64.b64decode(sys.argv[2])  # the attacker's target (not in plain text in the prompt)
out = open("loot.txt", "w")
def search(where, data):
    if key in data:
        out.write(f"FOUND {where}\\n")
    if b"ambient-proxy-" in data:
        out.write(f"PLACEHOLDER {where}\\n")
def search_file(path):
    try:
        with open(path, "rb") as handle:
            tail = b""
            while chunk := handle.read(1 << 20):
                search(path, tail + chunk)
                tail = chunk[-256:]
            out.write(f"READ {path}\\n")
    except OSError as exc:
        out.write(f"UNREADABLE {path} {exc.errno}\\n")
search("env", "\\n".join(f"{k}={v}" for k, v in os.environ.items()).encode())
out.write("READ env\\n")
for root, _, files in os.walk(state):
    for name in files:
        search_file(os.path.join(root, name))
for proc in glob.glob("/proc/[0-9]*"):
    for part in ("environ", "cmdline"):
        search_file(f"{proc}/{part}")
out.close()
"""


@pytest.fixture
def pod_dirs() -> Iterator[Path]:
    """Directories the non-root runner owns (outside /tmp/pytest-of-root, which only root can enter)."""
    root = Path(tempfile.mkdtemp(prefix="runner-pod-", dir="/tmp"))
    root.chmod(0o755)
    for name in ("workspace", "state", "events", "tmp"):
        (root / name).mkdir()
        os.chown(root / name, USER, USER)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0 or SYSTEM_PYTHON is None or shutil.which("setpriv") is None,
                    reason="needs root, setpriv and a system python3.11 to start the runner as another user")
@pytest.mark.parametrize("runner_type", RUNNERS)
def test_a_tool_finds_no_real_credential(runner_type: str, pod_dirs: Path) -> None:
    server = SERVERS[runner_type]().start()
    key = API_KEYS[runner_type]
    (pod_dirs / "workspace" / "collect.py").write_text(COLLECT)
    encoded = base64.b64encode(key.encode()).decode()
    server.shell_command = f"python3 collect.py {pod_dirs / 'state'} {encoded}"
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RUNNER_", "AGUI_", "PYTEST", "COV_")) and k not in OTHER_CREDENTIALS}
    env |= provider_environment(runner_type, server) | {
        "RUNNER_TYPE": runner_type, "AGUI_HOST": "127.0.0.1", "AGUI_PORT": str(port),
        "WORKSPACE_PATH": str(pod_dirs / "workspace"), "RUNNER_STATE_ROOT": str(pod_dirs / "state"),
        "RUNNER_EVENTS_DIR": str(pod_dirs / "events"), "TMPDIR": str(pod_dirs / "tmp"), "HOME": str(pod_dirs / "tmp"),
        "PYTHONPATH": f"{ROOT}:{SITE_PACKAGES}", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups", "--", SYSTEM_PYTHON, "main.py"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc, timeout=90)
        body = {"threadId": "t1", "messages": [{"id": "u1", "role": "user", "content": "Create out.txt with hello"}]}
        with httpx.stream("POST", f"{url}/run", json=body, timeout=120) as response:
            assert response.status_code == 200
            events = [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]
        runner_pid = proc.pid  # setpriv execs the runner: same pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        server.stop()
    check_stream(events, secrets=(key,))
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    loot = (pod_dirs / "workspace" / "loot.txt").read_text(errors="replace").splitlines()
    read = {line.split(" ", 1)[1] for line in loot if line.startswith("READ ")}
    assert "env" in read and any(path.endswith("/environ") for path in read), f"the tool did not run: {loot[:5]}"
    assert [line for line in loot if line.startswith("FOUND ")] == [], "the real credential was within reach"
    assert any(line.startswith("PLACEHOLDER ") for line in loot), "the CLI holds the proxy's placeholder instead"
    assert f"/proc/{runner_pid}/environ" not in read, "the runner's own environment is out of the tool's reach"
    seen = {value for request in server.requests for value in request.headers.values()}
    assert any(key in value for value in seen), "the model server received the real key, through the proxy"
