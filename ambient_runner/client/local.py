"""What ``ambient-runner serve`` (``make run``) chooses for a runner on a developer's machine, where the pod's
defaults would surprise: it listens on 127.0.0.1 (the agent runs shell commands, and nothing asks for a token), and
it keeps its workspace, state dir, attachments and temp dir in a folder of its own under the user's cache dir
(``$XDG_CACHE_HOME/ambient-runner/local-<port>``, else ``~/.cache/...``), never in the project's checkout, ``/``
or the ``/tmp`` every instance shares. The workspace is a git repository of its own, so the agent's git never
sees another one above it. A variable that is set wins; the image and the pod use the settings' defaults
(``AGUI_HOST=0.0.0.0``, ``/workspace``)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, MutableMapping
from pathlib import Path

LOCAL_HOST = "127.0.0.1"
DEFAULT_PORT = "8001"


def instance_dir(environ: Mapping[str, str], port: str) -> Path:
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ambient-runner" / f"local-{port}"


def local_defaults(environ: Mapping[str, str]) -> dict[str, object]:
    """The settings ``serve`` overrides: those whose variable is not set, as a local runner should have them."""
    port = environ.get("AGUI_PORT") or DEFAULT_PORT
    home = instance_dir(environ, port)
    chosen: dict[str, object] = {"agui_host": LOCAL_HOST, "workspace_path": home / "workspace",
                                 "runner_state_root": home / "state", "runner_attachments_dir": home / "attachments"}
    return {name: value for name, value in chosen.items() if not environ.get(name.upper())}


def use_own_temp_dir(environ: MutableMapping[str, str]) -> Path | None:
    """Unless TMPDIR is set: the instance's own temp dir, for the runner and its CLIs (Claude Code leaves its
    ``claude-<uid>`` and ``cc-socks`` folders there), so nothing lands in the ``/tmp`` every instance shares."""
    if environ.get("TMPDIR"):
        return None
    temp = instance_dir(environ, environ.get("AGUI_PORT") or DEFAULT_PORT) / "tmp"
    temp.mkdir(parents=True, exist_ok=True)
    environ["TMPDIR"] = str(temp)
    tempfile.tempdir = str(temp)  # gettempdir() caches its first answer
    return temp


def prepare_workspace(workspace: Path) -> None:
    """Create the workspace, a git repository of its own (unless it is one already)."""
    workspace.mkdir(parents=True, exist_ok=True)
    git = shutil.which("git")
    if git is not None and not (workspace / ".git").exists():
        subprocess.run([git, "init", "--quiet", str(workspace)], check=False, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
