"""A workspace folder's git repository: the folders it needs, checked (``repo_paths``, in the runner), and what the
endpoints ask of it (status, branches, remote, fetch, clone), done by libgit2 in the git worker (``git_worker``),
which may touch only those folders.

Refused (``LinkRefused``, naming what): a ``.git`` that is a symlink; a ``.git`` file whose ``gitdir`` leads out of
the workspace or into the state dir (one inside, as a submodule has, is fine); a ``commondir`` leading out; anything
in the git dir that is a symlink or no plain file or folder (a FIFO would hang a reader); a config ``include`` or
``includeIf``; ``objects/info/alternates``; a ``core.worktree`` elsewhere than the folder itself.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ambient_runner.stream.encoding import redact_url_value
from ambient_runner.workspace.git import Deadline, GitError, GitTokens, callbacks, lib
from ambient_runner.workspace.paths import LinkRefused, Workspace

if TYPE_CHECKING:
    from pygit2 import Repository



class ChangeCounts(TypedDict):
    hasChanges: bool
    filesAdded: int
    filesRemoved: int
    uncommittedFiles: int
    totalAdded: int
    totalRemoved: int


class StatusAnswer(TypedDict):
    """``/content/git-status``'s answer for a repository (the counts of ``ChangeCounts`` beside these)."""

    initialized: bool
    hasChanges: bool
    branch: str
    remoteUrl: str
    hasRemote: bool
    filesAdded: int
    filesRemoved: int
    uncommittedFiles: int
    totalAdded: int
    totalRemoved: int


class RepoDescription(TypedDict):
    """A repository of ``repos/`` as ``/repos/status`` lists it."""

    url: str
    name: str
    branches: list[str]
    currentActiveBranch: str
    defaultBranch: str


GITDIR_LINE = re.compile(r"gitdir:\s*(.+)")
INCLUDE = re.compile(r"^\s*\[\s*include", re.IGNORECASE | re.MULTILINE)
MAX_LINK_FILE = 64 * 1024


def _read(path: Path) -> str:
    """A small file that must be a plain file (never a FIFO that would block, nor through a link)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LinkRefused(f"{path.name} is not a plain file; not read")
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


def _plain_tree(top: Path, shown: str) -> None:
    """Every entry under ``top`` is a plain file or folder: no link (libgit2 would follow it, also to write), no FIFO,
    socket or device."""
    for folder, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                inside = os.path.relpath(os.path.join(folder, name), top)
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a plain file"
                raise LinkRefused(f"{shown}/.git/{inside} is {kind}; not followed")


def _check_git_dir(workspace: Workspace, git_dir: Path, shown: str) -> list[Path]:
    """The git dir and its common dir, once each is checked."""
    dirs = [git_dir]
    common = git_dir / "commondir"
    if common.is_file() and not common.is_symlink():
        target = git_dir / _read(common).strip()
        _refuse_outside(workspace, target, f"{shown}/.git/commondir")
        dirs.append(target)
    for checked in dirs:
        _plain_tree(checked, shown)
        config = checked / "config"
        if config.is_file() and INCLUDE.search(_read(config)):
            raise LinkRefused(f"{shown}/.git/config includes other files (include/includeIf); not followed")
        alternates = checked / "objects" / "info" / "alternates"
        if alternates.is_file() and any(line.strip() and not line.startswith("#")
                                        for line in _read(alternates).splitlines()):
            raise LinkRefused(f"{shown}/.git/objects/info/alternates names other object stores; not followed")
    return dirs


def repo_paths(workspace: Workspace, folder: Path, shown: str) -> list[Path] | None:
    """The folders the repository of ``folder`` needs (its work tree, git dir, common dir), each checked; None when
    ``folder`` has no repository."""
    git_dir = _git_dir(workspace, folder, shown)
    if git_dir is None:
        return None
    return [folder, *_check_git_dir(workspace, git_dir, shown)]


def bare_paths(workspace: Workspace, folder: Path, shown: str) -> list[Path]:
    """A bare repository (the folder is its git dir) named by a ``file://`` URL, checked as a git dir is."""
    _refuse_outside(workspace, folder, shown)
    if not (folder / "HEAD").is_file() or not (folder / "objects").is_dir():
        raise LinkRefused(f"{shown} is no git repository")
    return _check_git_dir(workspace, folder, shown)


def open_repository(folder: Path, shown: str) -> Repository:
    """The repository whose work tree is ``folder`` (no search upwards)."""
    pygit2 = lib()
    repo = pygit2.Repository(str(folder), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    if repo.workdir is None or Path(repo.workdir).resolve() != folder.resolve():
        raise LinkRefused(f"{shown}/.git sets core.worktree to another folder; not followed")
    return repo


def current_branch(repo: Repository) -> str:
    """As ``git rev-parse --abbrev-ref HEAD``: the branch, ``HEAD`` when detached, ``""`` before the first commit."""
    if repo.head_is_unborn:
        return ""
    return "HEAD" if repo.head_is_detached else repo.head.shorthand


def remote_url(repo: Repository, name: str = "origin") -> str:
    try:
        return repo.remotes[name].url or ""
    except (KeyError, ValueError):
        return ""


def status_answer(repo: Repository) -> StatusAnswer:
    """``/content/git-status``'s answer for a repository."""
    remote = redact_url_value(remote_url(repo))
    counts = status(repo)
    return {"initialized": True, "hasChanges": counts["hasChanges"], "branch": current_branch(repo),
            "remoteUrl": remote, "hasRemote": bool(remote), "filesAdded": counts["filesAdded"],
            "filesRemoved": counts["filesRemoved"], "uncommittedFiles": counts["uncommittedFiles"],
            "totalAdded": counts["totalAdded"], "totalRemoved": counts["totalRemoved"]}


def describe(repo: Repository, name: str) -> RepoDescription:
    """A repository of ``repos/`` as ``/repos/status`` lists it."""
    current = current_branch(repo)
    return {"url": redact_url_value(remote_url(repo)), "name": name, "branches": local_branches(repo),
            "currentActiveBranch": current, "defaultBranch": default_branch(repo) or current}


def status(repo: Repository) -> ChangeCounts:
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


def branches(repo: Repository) -> list[str]:
    """The remote's branches (``origin/`` dropped); a repository without a remote: its own branches."""
    remote = [name.removeprefix("origin/") for name in repo.branches.remote
              if name.startswith("origin/") and not name.endswith("/HEAD")]
    return sorted(set(remote or repo.branches.local))


def local_branches(repo: Repository) -> list[str]:
    return sorted(repo.branches.local)


def default_branch(repo: Repository) -> str:
    try:
        target = repo.references["refs/remotes/origin/HEAD"].target
    except (KeyError, ValueError):
        return ""
    return str(target).removeprefix("refs/remotes/origin/") if isinstance(target, str) else ""


def _single_branch(branch: str) -> list[str]:
    return [f"+refs/heads/{branch}:refs/remotes/origin/{branch}"]


def set_origin_and_fetch(repo: Repository, url: str, branch: str, tokens: GitTokens, deadline: Deadline,
                         proxy: str | None = None) -> bool:
    """``origin`` set to ``url`` (made when missing); ``branch`` fetched from it. Whether the fetch worked."""
    if remote_url(repo):
        repo.remotes.set_url("origin", url)
    else:
        repo.remotes.create("origin", url)
    origin = repo.remotes["origin"]
    if origin.url != url:  # the repository's own config rewrote it (url.*.insteadOf): never fetch elsewhere
        raise GitError("the repository's config rewrites the remote URL (url.*.insteadOf); not fetched")
    try:
        origin.fetch(_single_branch(branch), callbacks=callbacks(url, tokens, deadline), proxy=proxy)
    except (GitError, lib().GitError, KeyError):
        return False  # an empty remote or a branch not pushed yet: the remote is still configured
    return True


def clone_into(url: str, destination: Path, branch: str | None, tokens: GitTokens, depth: int | None,
               deadline: Deadline, proxy: str | None = None) -> None:
    """A clone of ``url`` (``branch`` only, when named) in ``destination``, whose config only libgit2 wrote."""
    pygit2 = lib()
    single = (lambda repo, name, remote: repo.remotes.create(name, remote, _single_branch(branch)[0])) if branch \
        else None
    shallow = 0 if url.startswith("file://") or not depth else depth  # libgit2's local transport is never shallow
    pygit2.clone_repository(url, str(destination), checkout_branch=branch, callbacks=callbacks(url, tokens, deadline),
                            depth=shallow, proxy=proxy, remote=single)


__all__ = ["bare_paths", "branches", "clone_into", "describe", "open_repository", "remote_url", "repo_paths",
           "set_origin_and_fetch", "status_answer"]
