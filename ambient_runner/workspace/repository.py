"""A workspace folder's git repository, opened only when everything it names stays inside the workspace, and what the
endpoints ask of it (status, branches, remote, fetch, clone). Blocking libgit2 calls: run them through
``git.in_thread``.

Refused (``LinkRefused``, naming the link): a ``.git`` that is a symlink; a ``.git`` file whose ``gitdir`` leads out of
the workspace or into the state dir (one inside, as a submodule has, is fine); a ``commondir``, an
``objects/info/alternates`` entry or a config ``include``/``includeIf`` path leading out; a ``core.worktree`` elsewhere
than the folder itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ambient_runner.workspace.git import Deadline, GitError, GitTokens, callbacks, lib
from ambient_runner.workspace.paths import LinkRefused, Workspace

GITDIR_LINE = re.compile(r"gitdir:\s*(.+)")
SECTION = re.compile(r"^\s*\[\s*([^\]\s\"]+)")
INCLUDE_PATH = re.compile(r"^\s*path\s*=\s*(.*?)\s*$", re.IGNORECASE)
MAX_LINK_FILE = 64 * 1024


def _read(path: Path) -> str:
    with path.open("rb") as source:
        return source.read(MAX_LINK_FILE).decode(errors="replace")


def _refuse_outside(workspace: Workspace, path: Path, shown: str) -> None:
    if not workspace.contains(path):
        raise LinkRefused(f"{shown} leads out of the workspace (or into the runner's state dir); not followed")


def _git_dir(workspace: Workspace, folder: Path, shown: str) -> Path | None:
    dotgit = folder / ".git"
    if dotgit.is_symlink():
        raise LinkRefused(f"{shown}/.git is a symbolic link; not followed")
    if dotgit.is_dir():
        return dotgit
    if not dotgit.is_file():
        return None
    found = GITDIR_LINE.match(_read(dotgit).strip())
    if not found:
        raise LinkRefused(f"{shown}/.git is a file that names no repository")
    git_dir = folder / found.group(1).strip()
    _refuse_outside(workspace, git_dir, f"{shown}/.git (gitdir: {found.group(1).strip()[:200]})")
    return git_dir


def _includes(config: Path) -> list[str]:
    """The ``path`` values of the config's ``[include]`` and ``[includeIf ...]`` sections."""
    paths, section = [], ""
    for line in _read(config).splitlines():
        if header := SECTION.match(line):
            section = header.group(1).lower()
        elif section in ("include", "includeif") and (value := INCLUDE_PATH.match(line)):
            paths.append(value.group(1).strip('"'))
    return paths


def _check_git_dir(workspace: Workspace, git_dir: Path, shown: str) -> None:
    common = git_dir / "commondir"
    if common.is_file():
        _refuse_outside(workspace, git_dir / _read(common).strip(), f"{shown}/.git/commondir")
    alternates = git_dir / "objects" / "info" / "alternates"
    if alternates.is_file():
        for line in _read(alternates).splitlines():
            if line.strip() and not line.startswith("#"):
                _refuse_outside(workspace, git_dir / "objects" / line.strip(), f"{shown}/.git/objects/info/alternates")
    config = git_dir / "config"
    if config.is_file():
        for included in _includes(config):
            where = Path(included).expanduser() if included.startswith("~") else git_dir / included
            _refuse_outside(workspace, where, f"{shown}/.git/config include.path {included[:200]!r}")


def open_repository(workspace: Workspace, folder: Path, shown: str) -> Any | None:
    """The repository whose work tree is ``folder`` (no search upwards), or None when it has none."""
    git_dir = _git_dir(workspace, folder, shown)
    if git_dir is None:
        return None
    _check_git_dir(workspace, git_dir, shown)
    pygit2 = lib()
    repo = pygit2.Repository(str(folder), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    if repo.workdir is None or Path(repo.workdir).resolve() != folder.resolve():
        raise LinkRefused(f"{shown}/.git sets core.worktree to another folder; not followed")
    _refuse_outside(workspace, Path(repo.path), f"{shown}/.git")
    return repo


def current_branch(repo: Any) -> str:
    """As ``git rev-parse --abbrev-ref HEAD``: the branch, ``HEAD`` when detached, ``""`` before the first commit."""
    if repo.head_is_unborn:
        return ""
    return "HEAD" if repo.head_is_detached else repo.head.shorthand


def remote_url(repo: Any, name: str = "origin") -> str:
    try:
        return repo.remotes[name].url or ""
    except (KeyError, ValueError):
        return ""


def status(repo: Any) -> dict[str, Any]:
    pygit2 = lib()
    flags = pygit2.enums.FileStatus
    changes = {path: flag for path, flag in repo.status(untracked_files="all").items()
               if flag not in (flags.CURRENT, flags.IGNORED)}
    added = removed = 0
    if not repo.head_is_unborn:
        stats = repo.diff(repo.head.peel(pygit2.Tree)).stats  # HEAD against the work tree, as ``git diff HEAD``
        added, removed = stats.insertions, stats.deletions
    return {"hasChanges": bool(changes),
            "filesAdded": sum(1 for f in changes.values() if f & (flags.WT_NEW | flags.INDEX_NEW)),
            "filesRemoved": sum(1 for f in changes.values() if f & (flags.WT_DELETED | flags.INDEX_DELETED)),
            "uncommittedFiles": len(changes), "totalAdded": added, "totalRemoved": removed}


def branches(repo: Any) -> list[str]:
    """The remote's branches (``origin/`` dropped); a repository without a remote: its own branches."""
    remote = [name.removeprefix("origin/") for name in repo.branches.remote
              if name.startswith("origin/") and not name.endswith("/HEAD")]
    return sorted(set(remote or repo.branches.local))


def local_branches(repo: Any) -> list[str]:
    return sorted(repo.branches.local)


def default_branch(repo: Any) -> str:
    try:
        target = repo.references["refs/remotes/origin/HEAD"].target
    except (KeyError, ValueError):
        return ""
    return str(target).removeprefix("refs/remotes/origin/") if isinstance(target, str) else ""


def _single_branch(branch: str) -> list[str]:
    return [f"+refs/heads/{branch}:refs/remotes/origin/{branch}"]


def set_origin_and_fetch(repo: Any, url: str, branch: str, tokens: GitTokens, deadline: Deadline) -> bool:
    """``origin`` set to ``url`` (made when missing); ``branch`` fetched from it. Whether the fetch worked."""
    if remote_url(repo):
        repo.remotes.set_url("origin", url)
    else:
        repo.remotes.create("origin", url)
    origin = repo.remotes["origin"]
    if origin.url != url:  # the repository's own config rewrote it (url.*.insteadOf): never fetch elsewhere
        raise GitError("the repository's config rewrites the remote URL (url.*.insteadOf); not fetched")
    try:
        origin.fetch(_single_branch(branch), callbacks=callbacks(url, tokens, deadline), proxy=None)
    except (GitError, lib().GitError, KeyError):
        return False  # an empty remote or a branch not pushed yet: the remote is still configured
    return True


def clone_into(url: str, destination: Path, branch: str | None, tokens: GitTokens, depth: int | None,
               deadline: Deadline) -> None:
    """A clone of ``url`` (``branch`` only, when named) in ``destination``, whose config only libgit2 wrote."""
    pygit2 = lib()
    single = (lambda repo, name, remote: repo.remotes.create(name, remote, _single_branch(branch)[0])) if branch \
        else None
    shallow = 0 if url.startswith("file://") or not depth else depth  # libgit2's local transport is never shallow
    pygit2.clone_repository(url, str(destination), checkout_branch=branch, callbacks=callbacks(url, tokens, deadline),
                            depth=shallow, proxy=None, remote=single)


__all__ = ["branches", "clone_into", "current_branch", "default_branch", "local_branches", "open_repository",
           "remote_url", "set_origin_and_fetch", "status"]
