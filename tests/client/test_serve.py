"""``ambient-runner serve`` (what ``make run`` starts): a runner on a developer's machine.

It listens on 127.0.0.1, keeps its workspace (a git repository of its own) and state dir under the user's cache
dir, says in one line when it is ready (URL, runner, model, workspace, state dir), logs one line per request and no
model request at INFO, and on Ctrl-C drains and exits 0 leaving nothing in the temp dir. The terminal client finds
it through AGUI_PORT. Under ``make`` with a terminal, Ctrl-C reaches the runner only, so ``make`` ends with its 0.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from ambient_runner.client.run import local_url

ROOT = Path(__file__).resolve().parents[2]
CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_VERTEX",
               "ANTHROPIC_BASE_URL")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(path: Path, pattern: str, proc: subprocess.Popen[bytes], timeout: float = 90) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, path.read_text(errors="replace"))
        if found:
            return found
        assert proc.poll() is None, path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"no {pattern!r} within {timeout} s:\n{path.read_text()}")


def test_the_client_goes_where_make_run_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGUI_PORT", raising=False)
    assert local_url() == "http://127.0.0.1:8001"
    monkeypatch.setenv("AGUI_PORT", "8002")
    assert local_url() == "http://127.0.0.1:8002"


@pytest.mark.real_cli
@pytest.mark.usefixtures("isolated_network")
def test_a_local_runner_says_where_it_is_logs_each_request_and_stops_clean(tmp_path: Path) -> None:
    port = free_port()
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_", "WORKSPACE_"))
           and k not in (*CREDENTIALS, "TMPDIR")}
    env |= {"RUNNER_TYPE": "claude", "AGUI_PORT": str(port), "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        started = time.time() - 1  # (the file system's clock is coarser than time.time())
        proc = subprocess.Popen([sys.executable, "-m", "ambient_runner.client.main", "serve",
                                 "--offline-if-no-credentials"], cwd=ROOT, env=env, stdout=sink, stderr=sink)
    try:
        ready = wait_for(log, r"ready on (\S+): runner (\S+), model (.+), workspace (\S+), state dir (\S+)\n", proc)
        home = cache / "ambient-runner" / f"local-{port}"
        assert ready.groups() == (f"http://127.0.0.1:{port}", "claude",
                                  "the CLI's default (the offline scripted model)", str(home / "workspace"),
                                  str(home / "state" / ".claude"))
        assert (home / "workspace" / ".git").is_dir()  # a repository of its own: the agent's git sees no other
        with pytest.raises(OSError), socket.create_connection(("127.0.0.2", port), timeout=2):
            pass  # loopback 127.0.0.1 only, not every address
        client = subprocess.run([sys.executable, "-m", "ambient_runner.client.main", "run",
                                 "Create out.txt with hello", "--thread", "t1"], cwd=ROOT, capture_output=True,
                                text=True, timeout=120, env=env)  # no --url: AGUI_PORT says where
        assert client.returncode == 0, client.stderr
        assert (home / "workspace" / "out.txt").read_text().strip() == "hello"
        assert httpx.get(f"http://127.0.0.1:{port}/ready", trust_env=False).status_code == 200
        wait_for(log, r'"GET /ready" 200', proc)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    access = [line for line in text.splitlines() if "ambient_runner.access" in line]
    assert len(access) == 2 and '"POST /run" 200' in access[0] and '"GET /ready" 200' in access[1], text
    assert "httpx" not in text and "Uvicorn running" not in text and text.count("ready on") == 1, text
    # nothing left behind in the shared temp dir: the runner's and Claude Code's temp files are the instance's own
    # (this pid, not a longer one that holds its digits, nor what an earlier process of the same pid left)
    ours = re.compile(rf"(?<![0-9]){proc.pid}(?![0-9])")
    assert not [p for p in Path(tempfile.gettempdir()).iterdir()
                if ours.search(p.name) and p.lstat().st_mtime >= started]
    home = cache / "ambient-runner" / f"local-{port}"
    assert {p.name for p in (home / "tmp").iterdir()} >= {f"claude-{os.getuid()}"}
    assert not [p for p in (home / "tmp").iterdir() if ours.search(p.name)]  # the events spool dir is gone


FOREGROUND_CHILD = """
import sys, time
from ambient_runner.client.foreground import own_foreground
with own_foreground():
    try:
        print("child ready", flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        sys.exit(0)
sys.exit(3)
"""
MAKE_LIKE_PARENT = """
import os, subprocess, sys
os.environ["MAKELEVEL"] = "1"
code = subprocess.run([sys.executable, "-c", sys.argv[1]]).returncode
print(f"child exited {code}", flush=True)
"""


def test_under_make_a_terminals_ctrl_c_reaches_the_runner_only() -> None:
    pid, fd = pty.fork()
    if pid == 0:  # a terminal's foreground job, like make: it dies on SIGINT if the terminal sends it one
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal's job starts (a suite run in the background
        # of a non-interactive shell has SIGINT ignored, and exec would keep that)
        os.chdir(ROOT)
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-c", MAKE_LIKE_PARENT, FOREGROUND_CHILD])
    out = b""

    def read_until(needle: bytes, timeout: float = 30) -> None:
        nonlocal out
        deadline = time.monotonic() + timeout
        while needle not in out and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    return

    read_until(b"child ready")
    os.write(fd, b"\x03")  # Ctrl-C, as the terminal driver sees it
    read_until(b"child exited")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert b"child exited 0" in out, out
    assert os.waitstatus_to_exitcode(status) == 0, out  # the make-like parent got no SIGINT
