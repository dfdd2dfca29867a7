"""The git worker: one libgit2 operation in a process of its own, confined to the folders the runner checked.

``python -m ambient_runner.workspace.git_worker`` reads one request on stdin (``{op, args, writable, readable,
tokens, bound}``), imports libgit2, confines itself with Landlock to ``writable`` (everything) and ``readable`` (the
system's own files, for TLS and name lookups) and answers one JSON line: ``{"ok": value}`` or
``{"error": kind, "message": ...}``. A repository that links elsewhere is refused by the kernel at the moment of the
access, a FIFO or a slow remote hangs only this process (the runner kills it at its bound), and libgit2 holding the
GIL never stops the runner's event loop.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ambient_runner.process.landlock import confine
from ambient_runner.workspace import repository
from ambient_runner.workspace.beneath import real_path
from ambient_runner.workspace.git import Deadline, GitError, GitTokens, WorkerArgs, lib
from ambient_runner.workspace.paths import LinkRefused, PathRefused, Workspace

if TYPE_CHECKING:
    from pygit2 import Repository


class WorkerRequest(TypedDict):
    """The one request a worker reads on stdin (``git.run_worker`` writes it)."""

    op: str
    args: WorkerArgs
    writable: list[str]
    readable: list[str]
    root: str
    state_dir: str
    bound: float
    tokens: dict[str, str]


Answer = dict[str, object]  # {"ok": the operation's JSON answer} or {"error": kind, "message": ...}


def _opened(args: WorkerArgs) -> Repository:
    return repository.open_repository(Path(args["folder"]), args["shown"])


def _configure(args: WorkerArgs, tokens: GitTokens, deadline: Deadline) -> bool:
    folder = Path(args["folder"])
    repo = _opened(args) if args["exists"] else lib().init_repository(str(folder))
    return repository.set_origin_and_fetch(repo, args["url"], str(args["branch"]), tokens, deadline, args.get("proxy"))


def _branches(args: WorkerArgs) -> list[str]:
    return repository.branches(_opened(args))


def _describe(args: WorkerArgs) -> list[repository.RepoDescription]:
    return [repository.describe(repository.open_repository(Path(folder), f"/repos/{name}"), name)
            for name, folder in args["entries"]]


OPERATIONS: dict[str, Callable[[WorkerArgs, GitTokens, Deadline], object]] = {
    "status": lambda args, _, __: repository.status_answer(_opened(args)),
    "branches": lambda args, _, __: _branches(args),
    "remote": lambda args, _, __: repository.remote_url(_opened(args)),
    "describe": lambda args, _, __: _describe(args),
    "configure": _configure,
    "clone": lambda args, tokens, deadline: repository.clone_into(
        args["url"], Path(args["destination"]), args["branch"], tokens, args["depth"], deadline, args.get("proxy")),
}


def _held(path: str, workspace: Workspace) -> int:
    """``path`` opened (``O_PATH``) and checked where it really is: inside the workspace, outside its state dir."""
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    if not workspace.contains(real_path(fd)):
        os.close(fd)
        raise LinkRefused(f"{path} now leads out of the workspace; not followed")
    return fd


def answer(request: WorkerRequest) -> Answer:
    tokens = GitTokens(**request.get("tokens", {}))
    pygit2 = lib()  # loaded before the confinement: its files are outside what the operation may touch
    workspace = Workspace(Path(request["root"]), Path(request["state_dir"]))
    try:
        writable: list[Path | int] = [_held(p, workspace) for p in request["writable"]]
        confine(writable, [Path(p) for p in request["readable"]])
    except PathRefused as exc:
        return {"error": "refused", "message": str(exc)}
    try:
        return {"ok": OPERATIONS[request["op"]](request["args"], tokens, Deadline(request["bound"]))}
    except PathRefused as exc:
        return {"error": "refused", "message": str(exc)}
    except PermissionError as exc:  # Landlock: something of the repository lies outside what was checked
        return {"error": "refused", "message": f"{request['args'].get('shown', 'the repository')} reaches outside "
                                                f"its own folders ({exc.strerror}); not followed"}
    except (GitError, pygit2.GitError, KeyError, ValueError, OSError) as exc:
        return {"error": "git", "message": tokens.redact((str(exc).strip() or type(exc).__name__)[-2000:])}


def main() -> None:
    request = json.loads(sys.stdin.read())
    sys.stdout.write(json.dumps(answer(request)) + "\n")


if __name__ == "__main__":
    main()
