"""The runner as a separate process (``python main.py``), as a pod starts it: a free port and the wait for /ready."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 60, headers: dict[str, str] | None = None,
               output: Callable[[], str] | None = None) -> None:
    """Until ``/ready`` is 200 (``headers``: the session token, when the runner has one)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            shown = output() if output else proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"runner exited: {shown}")
        try:
            if httpx.get(f"{url}/ready", timeout=2, headers=headers, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("runner not ready")
