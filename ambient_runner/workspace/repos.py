"""Git status, branches and remotes of a workspace directory, and the repositories under ``/workspace/repos``.

The platform's init container clones the session's repositories (``REPOS_JSON``) into ``repos/<name>`` before the
runner starts: they are listed like any other, never cloned again.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
from pathlib import Path
from typing import TypedDict

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ag_ui_cli_common.json_types import JsonObject, JsonValue, iterable_or_empty, object_or_empty
from ambient_runner.stream.encoding import redact_url_value
from ambient_runner.workspace import files, repository
from ambient_runner.workspace.git import REMOTE_TIMEOUT, GitTokens, local_path, run_worker
from ambient_runner.workspace.paths import PathRefused, Workspace

REPO_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
URL = re.compile(r"^(https?|file)://[^\s]+$")
BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/+-]{1,200}(?<![./])$")


class RepoConflict(RunnerError, RuntimeError):
    code = ErrorCode.REPO_EXISTS


class Added(TypedDict):
    """``/repos/add``'s answer."""

    message: str
    name: str
    path: str
    newly_cloned: bool


class UnknownRepo(RunnerError, LookupError):
    code = ErrorCode.NOT_FOUND


def check_remote_url(url: str, workspace: Workspace) -> str:
    """A URL the endpoints fetch from: ``https://`` (``http://``, never given a token), or ``file://`` naming a
    repository inside the workspace (never its state dir or another folder of the runner); no credentials in it."""
    url = url.strip()
    if not URL.match(url) or not url.isprintable():
        raise PathRefused("the URL must be https:// (http://), or file:// for a repository inside the workspace")
    scheme, rest = url.split("://", 1)
    if scheme != "file" and "@" in rest:  # userinfo, whatever its characters ('/' in a password ends the host)
        raise PathRefused("the URL must not carry credentials; send a token in X-GitHub-Token / X-GitLab-Token")
    if scheme == "file":
        if any(ch in rest for ch in "?#%"):  # a query, fragment or escape: the path checked must be the one used
            raise PathRefused("a file:// URL names a plain path: no '?', '#' or '%'")
        if rest.split("/", 1)[0] not in ("", "localhost"):
            raise PathRefused("a file:// URL names a folder on this machine: file:///path")
        if not workspace.contains(local_path(url)):
            raise PathRefused("a file:// URL must name a repository inside the workspace (not the runner's own "
                              "folders)")
    return url


def check_branch(branch: str) -> str:
    """A plain branch name: never an option, a range or anything git would read as something else."""
    branch = branch.strip()
    if not BRANCH.match(branch):
        raise PathRefused(f"branch {branch[:100]!r} is not a plain branch name")
    return branch


def repo_name(url: str, name: str | None) -> str:
    """The directory name: the given one, or the URL's last segment without ``.git`` (as the platform names it)."""
    chosen = (name or "").strip() or url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    if not REPO_NAME.match(chosen) or chosen in (".", ".."):
        raise PathRefused(f"repository name {chosen!r}: use letters, digits, '.', '_' and '-'")
    return chosen


async def _checked(workspace: Workspace, folder: Path) -> list[Path] | None:
    """The folders ``folder``'s repository needs, checked (``repository.repo_paths``); None: it has none."""
    return await asyncio.to_thread(repository.repo_paths, workspace, folder, workspace.relative(folder))


async def _query(workspace: Workspace, folder: Path, op: str) -> JsonValue:
    """The git worker's ``op`` (status, branches, remote) on ``folder``'s repository, confined to its checked
    folders; None when it has none."""
    paths = await _checked(workspace, folder)
    if paths is None:
        return None
    return await run_worker(op, {"folder": str(folder), "shown": workspace.relative(folder)}, workspace,
                            writable=paths)


async def git_status(workspace: Workspace, raw: str) -> JsonObject:
    """The worker's ``repository.StatusAnswer``; a folder with no repository: not initialized, no changes."""
    answer = await _query(workspace, workspace.resolve(raw), "status")
    return object_or_empty(answer) if answer is not None else {"initialized": False, "hasChanges": False}


async def list_branches(workspace: Workspace, raw: str) -> list[str]:
    """The remote's branches (``origin/`` dropped); a repository without a remote: its own branches."""
    branches = await _query(workspace, workspace.resolve(raw), "branches")
    if branches is None:
        raise UnknownRepo(f"{raw or '/'} is not a git repository")
    return [str(branch) for branch in iterable_or_empty(branches)]  # the worker's list of names


async def _source(workspace: Workspace, url: str) -> tuple[Path, ...]:
    """What a clone or fetch from ``url`` may read: for ``file://``, the checked folders of that repository."""
    if not url.startswith("file://"):
        return ()
    folder = local_path(url)
    if not folder.exists():
        return ()  # libgit2 says so, naming it
    shown = workspace.relative(folder.resolve())
    if (folder / ".git").exists() or (folder / ".git").is_symlink():
        paths = await _checked(workspace, folder)
    else:  # a bare repository: the folder is its git dir
        paths = await asyncio.to_thread(repository.bare_paths, workspace, folder, shown)
    return tuple(paths or ())


async def configure_remote(workspace: Workspace, raw: str, url: str, branch: str, tokens: GitTokens) -> JsonObject:
    target = workspace.resolve(raw)
    if not target.is_dir():
        raise UnknownRepo(f"{raw or '/'} is not a directory")
    url, branch = check_remote_url(url, workspace), check_branch(branch)
    paths = await _checked(workspace, target)
    fetched = await run_worker("configure", {"folder": str(target), "shown": workspace.relative(target),
                                             "exists": paths is not None, "url": url, "branch": branch}, workspace,
                               writable=paths or [target], readable=await _source(workspace, url), tokens=tokens,
                               bound=REMOTE_TIMEOUT)
    return {"message": "remote configured", "remote": redact_url_value(url), "branch": branch, "fetched": fetched}


async def clone(workspace: Workspace, url: str, parent: str, name: str, branch: str | None, tokens: GitTokens, *,
                depth: int | None = None, temporary_suffix: str = ".clone-tmp") -> str:
    """Clone ``url`` into a fresh ``<parent>/.<name><suffix>`` (the worker may write only there); the temporary
    folder's name beneath ``parent``, to be moved or removed through ``parent``'s descriptor."""
    chosen = check_branch(branch) if branch else None
    temporary = f".{name}{temporary_suffix}"
    await asyncio.to_thread(_fresh_folder, workspace, parent, temporary)
    try:
        await run_worker("clone", {"url": url, "destination": str(workspace.root / parent / temporary),
                                   "branch": chosen, "depth": depth}, workspace,
                         writable=[workspace.root / parent / temporary], readable=await _source(workspace, url),
                         tokens=tokens, bound=REMOTE_TIMEOUT)
    except BaseException:
        await asyncio.to_thread(remove_in, workspace, parent, temporary)
        raise
    return temporary


async def remote_of(workspace: Workspace, folder: Path) -> str:
    """``folder``'s ``origin`` URL (``""`` when it has none)."""
    return str(await _query(workspace, folder, "remote") or "")  # the worker answers a string or null


def _fresh_folder(workspace: Workspace, parent: str, name: str) -> None:
    """An empty ``<parent>/<name>`` (``parent`` made when missing), through ``parent``'s descriptor."""
    remove_in(workspace, parent, name)
    files.beneath(workspace).make_folders(parent)
    with files.beneath(workspace).opened(parent) as folder:
        os.mkdir(name, 0o775, dir_fd=folder)


def remove_in(workspace: Workspace, parent: str, name: str) -> None:
    """Remove ``<parent>/<name>`` through ``parent``'s descriptor: a link itself, never what it names; a folder with
    ``rmtree``'s descriptor-based walk (a folder swapped for a link mid-way is not followed)."""
    try:
        with files.beneath(workspace).opened(parent) as folder:
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                shutil.rmtree(name, dir_fd=folder)
            else:
                os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        return


def move_in(workspace: Workspace, parent: str, source: str, name: str) -> None:
    """Rename ``<parent>/<source>`` to ``<parent>/<name>`` through ``parent``'s descriptor."""
    with files.beneath(workspace).opened(parent) as folder:
        os.rename(source, name, src_dir_fd=folder, dst_dir_fd=folder)


class Repositories:
    """``/workspace/repos/<name>``: add (clone), remove, status."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._lock = asyncio.Lock()  # one clone or removal at a time

    def root(self) -> Path:
        """``repos/``, refused when it is a link."""
        return self.workspace.top_folder("repos")

    async def add(self, url: str, branch: str | None, name: str | None, tokens: GitTokens) -> Added:
        url = check_remote_url(url, self.workspace)
        name = repo_name(url, name)
        async with self._lock:
            self.root()
            destination = self.workspace.resolve(f"repos/{name}", allow_root=False)
            if destination.exists():
                existing = await remote_of(self.workspace, destination)
                if existing != url:
                    raise RepoConflict(f"repos/{name} already exists with another URL "
                                       f"({redact_url_value(existing) or 'none'})")
                return {"message": "already cloned", "name": name, "path": f"/repos/{name}", "newly_cloned": False}
            temporary = await clone(self.workspace, url, "repos", name, branch or None, tokens)
            await asyncio.to_thread(move_in, self.workspace, "repos", temporary, name)
        return {"message": "cloned", "name": name, "path": f"/repos/{name}", "newly_cloned": True}

    async def remove(self, name: str) -> None:
        name = repo_name("", name)
        async with self._lock:
            self.root()
            lexical = self.workspace.lexical(f"repos/{name}")
            if not lexical.is_symlink() and not lexical.is_dir():
                raise UnknownRepo(f"no repository named {name!r}")
            await asyncio.to_thread(remove_in, self.workspace, "repos", name)

    async def status(self) -> JsonValue:
        """The worker's ``repository.RepoDescription`` of each repository of ``repos/``."""
        root = self.root()
        if not root.is_dir():
            return []
        entries: list[tuple[str, str]] = []
        writable: list[Path] = []
        for entry in sorted(root.iterdir(), key=lambda e: e.name):
            if entry.is_symlink() or entry.name.endswith(".clone-tmp"):
                continue
            try:  # one whose .git leads out (or holds links) is left out of the list
                paths = await _checked(self.workspace, entry)
            except PathRefused:
                continue
            if paths is not None:
                entries.append((entry.name, str(entry)))
                writable += paths
        if not entries:
            return []
        return await run_worker("describe", {"entries": entries}, self.workspace, writable=writable)


__all__ = ["Added", "RepoConflict", "Repositories", "UnknownRepo", "configure_remote", "git_status",
           "list_branches"]
