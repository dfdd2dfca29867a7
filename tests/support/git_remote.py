"""Git remotes for the workspace tests: bare repositories on this machine (``file://``), made with the git binary.

The workspace endpoints clone ``file://`` only from inside the workspace, so the tests keep their remotes in
``<workspace>/remotes`` (``remotes_in``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

AUTHOR = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid", "GIT_COMMITTER_NAME": "Test",
          "GIT_COMMITTER_EMAIL": "test@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
          "PATH": "/usr/local/bin:/usr/bin:/bin"}


def remotes_in(root: Path) -> Path:
    """Where a test keeps its bare remotes: inside the workspace the harness makes under ``root``."""
    return root / "workspace" / "remotes"


def run_git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=AUTHOR, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def bare_repo(root: Path, name: str, files: dict[str, str], branches: tuple[str, ...] = ()) -> str:
    """A bare repository ``<root>/<name>.git`` whose ``main`` holds ``files``; its ``file://`` URL."""
    work = root / f"{name}-work"
    work.mkdir(parents=True)
    run_git("init", "--quiet", "--initial-branch=main", cwd=work)
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    run_git("add", "-A", cwd=work)
    run_git("commit", "--quiet", "-m", "initial", cwd=work)
    for branch in branches:
        run_git("branch", branch, cwd=work)
    bare = root / f"{name}.git"
    run_git("clone", "--quiet", "--bare", str(work), str(bare), cwd=root)
    return f"file://{bare}"
