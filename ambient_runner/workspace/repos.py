"""Git status, branches and remotes of a workspace directory, and the repositories under ``/workspace/repos``.

The platform's init container clones the session's repositories (``REPOS_JSON``) into ``repos/<name>`` before the
runner starts: they are listed like any other, never cloned again.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from typing import Any

from ambient_runner.workspace import repository
from ambient_runner.workspace.git import REMOTE_TIMEOUT, GitTokens, in_thread, local_path, redact_url
from ambient_runner.workspace.paths import PathRefused, Workspace

REPO_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
URL = re.compile(r"^(https?|file)://[^\s]+$")
BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/+-]{1,200}(?<![./])$")


class RepoConflict(RuntimeError):
    pass


class UnknownRepo(LookupError):
    pass


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


async def git_status(workspace: Workspace, raw: str) -> dict[str, Any]:
    target, shown = workspace.resolve(raw), workspace.relative(workspace.resolve(raw))

    def read(_: Any) -> dict[str, Any]:
        repo = repository.open_repository(workspace, target, shown)
        if repo is None:
            return {"initialized": False, "hasChanges": False}
        remote = redact_url(repository.remote_url(repo))
        counts = repository.status(repo)
        return {"initialized": True, "hasChanges": counts.pop("hasChanges"), "branch": repository.current_branch(repo),
                "remoteUrl": remote, "hasRemote": bool(remote), **counts}

    return await in_thread(read)


async def list_branches(workspace: Workspace, raw: str) -> list[str]:
    """The remote's branches (``origin/`` dropped); a repository without a remote: its own branches."""
    target = workspace.resolve(raw)

    def read(_: Any) -> list[str]:
        repo = repository.open_repository(workspace, target, workspace.relative(target))
        if repo is None:
            raise UnknownRepo(f"{raw or '/'} is not a git repository")
        return repository.branches(repo)

    return await in_thread(read)


async def configure_remote(workspace: Workspace, raw: str, url: str, branch: str, tokens: GitTokens) -> dict:
    target = workspace.resolve(raw)
    if not target.is_dir():
        raise UnknownRepo(f"{raw or '/'} is not a directory")
    url, branch = check_remote_url(url, workspace), check_branch(branch)

    def configure(deadline: Any) -> bool:
        repo = repository.open_repository(workspace, target, workspace.relative(target)) or \
            repository.lib().init_repository(str(target))
        return repository.set_origin_and_fetch(repo, url, branch, tokens, deadline)

    fetched = await in_thread(configure, tokens=tokens, bound=REMOTE_TIMEOUT)
    return {"message": "remote configured", "remote": redact_url(url), "branch": branch, "fetched": fetched}


async def clone(url: str, destination: Path, branch: str | None, tokens: GitTokens, *,
                depth: int | None = None) -> None:
    """Clone into ``destination`` through a temporary sibling, so a failed clone leaves nothing behind."""
    temporary = destination.with_name(f".{destination.name}.clone-tmp")
    await asyncio.to_thread(clear, temporary)
    destination.parent.mkdir(parents=True, exist_ok=True)
    chosen = check_branch(branch) if branch else None
    try:
        await in_thread(lambda deadline: repository.clone_into(url, temporary, chosen, tokens, depth, deadline),
                        tokens=tokens, bound=REMOTE_TIMEOUT)
        temporary.rename(destination)
    finally:
        await asyncio.to_thread(clear, temporary)


async def remote_of(workspace: Workspace, folder: Path) -> str:
    """``folder``'s ``origin`` URL (``""`` when it has none)."""
    def read(_: Any) -> str:
        repo = repository.open_repository(workspace, folder, workspace.relative(folder))
        return repository.remote_url(repo) if repo is not None else ""
    return await in_thread(read)


def clear(path: Path) -> None:
    """Remove what is at ``path``: a symlink itself, never what it points at."""
    if path.is_symlink():
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def remove_tree(workspace: Workspace, lexical: Path, parent: Path) -> None:
    """Remove ``lexical`` (a direct child of ``parent``): a symlink is unlinked, never followed."""
    if lexical.is_symlink():
        lexical.unlink()
        return
    real = workspace.check(lexical, allow_root=False)
    if real.parent != parent.resolve():
        raise PathRefused(f"{workspace.relative(real)} is not directly under {workspace.relative(parent)}")
    shutil.rmtree(real)


class Repositories:
    """``/workspace/repos/<name>``: add (clone), remove, status."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._lock = asyncio.Lock()  # one clone or removal at a time

    @property
    def root(self) -> Path:
        return self.workspace.top_folder("repos")

    async def add(self, url: str, branch: str | None, name: str | None, tokens: GitTokens) -> dict[str, Any]:
        url = check_remote_url(url, self.workspace)
        name = repo_name(url, name)
        async with self._lock:
            self.root  # noqa: B018 - refused when /repos is a link
            destination = self.workspace.resolve(f"repos/{name}", allow_root=False)
            if destination.exists():
                existing = await remote_of(self.workspace, destination)
                if existing != url:
                    raise RepoConflict(f"repos/{name} already exists with another URL "
                                       f"({redact_url(existing) or 'none'})")
                return {"message": "already cloned", "name": name, "path": f"/repos/{name}", "newly_cloned": False}
            await clone(url, destination, branch or None, tokens)
        return {"message": "cloned", "name": name, "path": f"/repos/{name}", "newly_cloned": True}

    async def remove(self, name: str) -> None:
        lexical = self.workspace.lexical(f"repos/{repo_name('', name)}")
        async with self._lock:
            if not lexical.is_symlink() and not lexical.is_dir():
                raise UnknownRepo(f"no repository named {name!r}")
            await asyncio.to_thread(remove_tree, self.workspace, lexical, self.root)

    async def status(self) -> list[dict[str, Any]]:
        root = self.root
        if not root.is_dir():
            return []
        return await in_thread(lambda _: [found for entry in sorted(root.iterdir(), key=lambda e: e.name)
                                          if (found := self._describe(entry)) is not None])

    def _describe(self, entry: Path) -> dict[str, Any] | None:
        """A repository of ``repos/``; None for what is not one (a link, a plain folder, a clone under way, one
        whose ``.git`` leads out)."""
        if entry.is_symlink() or entry.name.endswith(".clone-tmp"):
            return None
        try:
            repo = repository.open_repository(self.workspace, entry, f"/repos/{entry.name}")
        except PathRefused:
            return None
        if repo is None:
            return None
        current = repository.current_branch(repo)
        return {"url": redact_url(repository.remote_url(repo)), "name": entry.name,
                "branches": repository.local_branches(repo), "currentActiveBranch": current,
                "defaultBranch": repository.default_branch(repo) or current}


__all__ = ["RepoConflict", "Repositories", "UnknownRepo", "configure_remote", "git_status",
           "list_branches"]
