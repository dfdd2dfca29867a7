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

from ambient_runner.workspace.git import NO_TOKENS, REMOTE_TIMEOUT, GitError, GitTokens, git, redact_url
from ambient_runner.workspace.paths import PathRefused, Workspace

REPO_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
URL = re.compile(r"^(https?|ssh|git|file)://[^\s]+$|^[\w.-]+@[\w.-]+:[^\s]+$")
BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/+-]{1,200}(?<![./])$")


class RepoConflict(RuntimeError):
    pass


class UnknownRepo(LookupError):
    pass


def check_remote_url(url: str) -> str:
    url = url.strip()
    if not URL.match(url) or url.startswith("-") or not url.isprintable():
        raise PathRefused("the URL must be https://, http://, ssh://, git://, file:// or user@host:path")
    if re.match(r"^https?://[^/]*@", url) or re.match(r"^[a-z]+://[^/@\s]+:[^/@\s]*@", url):
        raise PathRefused("the URL must not carry credentials; send a token in X-GitHub-Token / X-GitLab-Token")
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


async def _git_or(default: str, *args: str, cwd: Path) -> str:
    try:
        return (await git(*args, cwd=cwd)).strip()
    except GitError:
        return default


async def git_status(workspace: Workspace, raw: str) -> dict[str, Any]:
    target = workspace.resolve(raw)
    if not (target / ".git").exists():
        return {"initialized": False, "hasChanges": False}
    branch = await _git_or("", "rev-parse", "--abbrev-ref", "HEAD", cwd=target)
    remote = redact_url(await _git_or("", "remote", "get-url", "origin", cwd=target))
    porcelain = [line for line in (await git("status", "--porcelain", "--untracked-files=all", cwd=target))
                 .splitlines() if line.strip()]
    numstat = await _git_or("", "diff", "--numstat", "HEAD", cwd=target)
    total_added = total_removed = 0
    for line in numstat.splitlines():
        added, removed, *_ = [*line.split("\t"), "", ""]
        total_added += int(added) if added.isdigit() else 0
        total_removed += int(removed) if removed.isdigit() else 0
    files_added = sum(1 for line in porcelain if line[:2].strip() in ("??", "A", "AM"))
    files_removed = sum(1 for line in porcelain if "D" in line[:2])
    return {"initialized": True, "hasChanges": bool(porcelain), "branch": branch, "remoteUrl": remote,
            "hasRemote": bool(remote), "filesAdded": files_added, "filesRemoved": files_removed,
            "uncommittedFiles": len(porcelain), "totalAdded": total_added, "totalRemoved": total_removed}


async def list_branches(workspace: Workspace, raw: str) -> list[str]:
    """The remote's branches (``origin/`` dropped); a repository without a remote: its own branches."""
    target = workspace.resolve(raw)
    if not (target / ".git").exists():
        raise UnknownRepo(f"{raw or '/'} is not a git repository")
    remote = (await git("branch", "-r", "--format=%(refname:short)", cwd=target)).split()
    branches = [b.removeprefix("origin/") for b in remote if not b.endswith("/HEAD") and b != "origin"]
    if not branches:
        branches = (await git("branch", "--format=%(refname:short)", cwd=target)).split()
    return sorted(set(branches))


async def configure_remote(workspace: Workspace, raw: str, url: str, branch: str, tokens: GitTokens) -> dict:
    target = workspace.resolve(raw)
    if not target.is_dir():
        raise UnknownRepo(f"{raw or '/'} is not a directory")
    url, branch = check_remote_url(url), check_branch(branch)
    if not (target / ".git").exists():
        await git("init", "--quiet", cwd=target)
    verb = "set-url" if await _git_or("", "remote", "get-url", "origin", cwd=target) else "add"
    await git("remote", verb, "--", "origin", url, cwd=target)
    fetched = True
    try:
        await git("fetch", "--quiet", "--", "origin", branch, cwd=target, tokens=tokens.for_url(url),
                  bound=REMOTE_TIMEOUT)
    except GitError:
        fetched = False  # an empty remote or a branch not pushed yet: the remote is still configured
    return {"message": "remote configured", "remote": redact_url(url), "branch": branch, "fetched": fetched}


async def clone(url: str, destination: Path, branch: str | None, tokens: GitTokens, *,
                depth: int | None = None) -> None:
    """Clone into ``destination`` through a temporary sibling, so a failed clone leaves nothing behind."""
    url = check_remote_url(url)
    temporary = destination.with_name(f".{destination.name}.clone-tmp")
    await asyncio.to_thread(clear, temporary)
    destination.parent.mkdir(parents=True, exist_ok=True)
    args = ["clone", "--quiet", "--single-branch", *([f"--branch={check_branch(branch)}"] if branch else []),
            *(["--depth", str(depth)] if depth else []), "--", url, str(temporary)]
    try:
        await git(*args, cwd=destination.parent, tokens=tokens.for_url(url), bound=REMOTE_TIMEOUT)
        temporary.rename(destination)
    finally:
        await asyncio.to_thread(clear, temporary)


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
        self.root = workspace.root / "repos"
        self._lock = asyncio.Lock()  # one clone or removal at a time

    async def add(self, url: str, branch: str | None, name: str | None, tokens: GitTokens) -> dict[str, Any]:
        url = check_remote_url(url)
        name = repo_name(url, name)
        async with self._lock:
            destination = self.workspace.resolve(f"repos/{name}", allow_root=False)
            if destination.exists():
                existing = await _git_or("", "remote", "get-url", "origin", cwd=destination)
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
        if not self.root.is_dir():
            return []
        repos = []
        for entry in sorted(self.root.iterdir(), key=lambda e: e.name):
            if entry.is_symlink() or not (entry / ".git").exists() or entry.name.endswith(".clone-tmp"):
                continue
            branches = (await _git_or("", "branch", "--format=%(refname:short)", cwd=entry)).split()
            current = await _git_or("", "rev-parse", "--abbrev-ref", "HEAD", cwd=entry)
            default = (await _git_or("", "symbolic-ref", "--short", "refs/remotes/origin/HEAD", cwd=entry))
            repos.append({"url": redact_url(await _git_or("", "remote", "get-url", "origin", cwd=entry)),
                          "name": entry.name,
                          "branches": branches, "currentActiveBranch": current,
                          "defaultBranch": default.removeprefix("origin/") or current})
        return repos


__all__ = ["NO_TOKENS", "RepoConflict", "Repositories", "UnknownRepo", "configure_remote", "git_status",
           "list_branches"]
