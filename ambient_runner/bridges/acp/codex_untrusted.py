"""``codex app-server`` for codex-acp with every folder it works in untrusted (the trust rule, docs/workflows.md).

codex-acp marks each session's folders (its ``cwd`` and additional directories) ``trust_level = "trusted"`` in the
configuration it gives each thread (``thread/start``, ``thread/resume``, ``thread/fork``: ``config.projects``). That
configuration ranks above ``$CODEX_HOME/config.toml`` and above the app-server's own ``-c`` overrides, so Codex would
load the folder's ``.codex/config.toml`` (MCP servers, ``notify``, hooks, exec policies) whatever the runner writes.

The runner names this script as codex-acp's Codex (``CODEX_PATH``, through a launcher): it starts the real Codex
(its arguments: the command, then codex-acp's) and passes codex-acp's messages on unchanged but for that one
field, every ``trust_level`` under ``params.config.projects`` set to ``untrusted``. Codex's answers go straight to
codex-acp (its stdout is inherited), as does its stderr.

Run as a file (``python -I -S codex_untrusted.py <codex command> app-server ...``): it imports nothing of the runner.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from typing import IO

UNTRUSTED = "untrusted"


def untrusted(line: bytes) -> bytes:
    """One JSON-RPC line from codex-acp, with every project in its ``params.config.projects`` untrusted."""
    if b'"trust_level"' not in line:
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line
    params = message.get("params") if isinstance(message, dict) else None
    config = params.get("config") if isinstance(params, dict) else None
    projects = config.get("projects") if isinstance(config, dict) else None
    if not isinstance(projects, dict):
        return line
    for project in projects.values():
        if isinstance(project, dict) and "trust_level" in project:
            project["trust_level"] = UNTRUSTED
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def relay(source: IO[bytes], target: IO[bytes]) -> None:
    """codex-acp's lines to Codex until either side closes."""
    try:
        for line in source:
            target.write(untrusted(line))
            target.flush()
    except OSError:  # Codex is gone
        pass
    finally:
        with contextlib.suppress(OSError):
            target.close()


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: codex_untrusted.py <codex command> [arguments]", file=sys.stderr)
        return 2
    codex = subprocess.Popen(argv, stdin=subprocess.PIPE)  # stdout and stderr: codex-acp's own pipes
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # codex-acp stops its app-server: Codex
        signal.signal(signum, lambda received, _frame: codex.send_signal(received))
    assert codex.stdin is not None
    threading.Thread(target=relay, args=(sys.stdin.buffer, codex.stdin), daemon=True).start()
    code = codex.wait()
    return 128 - code if code < 0 else code  # ended by a signal: as a shell reports it


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(status)  # not through the interpreter's shutdown: the relay thread may still wait on codex-acp's pipe
