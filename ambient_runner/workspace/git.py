"""Git for the workspace endpoints, through libgit2 (pygit2) inside the runner: no ``git`` process is started.

That makes the endpoints safe by construction against a repository (or the agent) that configured commands: libgit2
runs no filter driver (``filter.*.clean``/``process``), no hook, no fsmonitor, no pager or editor, no
``uploadpack``/``receivepack`` and no ``core.sshCommand``; it reads no user, XDG or system config (the search path is
emptied) and only the repository's own, whose values can change no URL the runner fetches (checked after the remote
is made). Tokens (the platform's ``X-GitHub-Token`` / ``X-GitLab-Token``) never leave this process: libgit2 asks for
them through a callback, which answers only over https and only for the host of the URL the call was made for.

Features of git the endpoints therefore do not honour: filter drivers (LFS pointers stay pointers in a clone and in
``git-status``), textconv, hooks, ssh/git/ext transports, ``url.*.insteadOf`` rewrites, shallow ``file://`` clones.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

from ambient_runner.stream.encoding import redact_url
from ambient_runner.workspace.paths import PathRefused

if TYPE_CHECKING:
    import pygit2

LOCAL_TIMEOUT = 30.0
REMOTE_TIMEOUT = 120.0
T = TypeVar("T")


class GitError(RuntimeError):
    """A git operation failed or timed out; the message is libgit2's own (tokens and URL credentials removed)."""


@dataclass(frozen=True)
class GitTokens:
    github: str = ""
    gitlab: str = ""

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> GitTokens:
        return cls(headers.get("x-github-token", "").strip(), headers.get("x-gitlab-token", "").strip())

    def for_request(self, url: str, host: str) -> tuple[str, str] | None:
        """``(username, token)`` for a request libgit2 makes to ``url``: over https to ``host`` only."""
        parts = urlsplit(url)
        if parts.scheme != "https" or not host or (parts.hostname or "").lower() != host.lower():
            return None
        if "gitlab" in host.lower():
            return ("oauth2", self.gitlab) if self.gitlab else None
        return ("x-access-token", self.github) if self.github else None

    def redact(self, text: str) -> str:
        for token in (self.github, self.gitlab):
            if token:
                text = text.replace(token, "[redacted]")
        return redact_url(text)


NO_TOKENS = GitTokens()


@functools.cache
def lib() -> Any:
    """pygit2, imported at the first git call (an idle runner never loads it) and set up once: no config but the
    repository's own, no owner check (the workspace volume's files may belong to the init container's user)."""
    import pygit2
    from pygit2.enums import ConfigLevel

    for level in (ConfigLevel.SYSTEM, ConfigLevel.XDG, ConfigLevel.GLOBAL, ConfigLevel.PROGRAMDATA):
        pygit2.settings.search_path[level] = "/nonexistent/ambient-runner-no-git-config"
    pygit2.settings.owner_validation = False
    pygit2.settings.server_connect_timeout = int(LOCAL_TIMEOUT * 1000)
    pygit2.settings.server_timeout = int(REMOTE_TIMEOUT * 1000)
    return pygit2


class Deadline:
    """Bounds a blocking libgit2 call: its progress callbacks stop it once the time is up or the caller gave up."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.cancelled = threading.Event()

    def check(self) -> None:
        if self.cancelled.is_set() or time.monotonic() > self.ends:
            raise GitError(f"the git operation did not finish within {self.seconds:g} s")


def callbacks(url: str, tokens: GitTokens, deadline: Deadline) -> pygit2.RemoteCallbacks:
    pygit2 = lib()
    host = urlsplit(url).hostname or ""

    class Callbacks(pygit2.RemoteCallbacks):  # type: ignore[misc,name-defined]
        asked = 0

        def credentials(self, request_url: str, username: str | None, allowed: Any) -> Any:
            self.asked += 1
            found = tokens.for_request(request_url, host)
            if found is None or self.asked > 1:
                raise GitError("the remote asks for credentials that were refused or not sent "
                               "(send X-GitHub-Token or X-GitLab-Token for an https remote)")
            return pygit2.UserPass(*found)

        def transfer_progress(self, stats: Any) -> None:
            deadline.check()

        def sideband_progress(self, text: str) -> None:
            deadline.check()

    return Callbacks()


async def in_thread(call: Callable[[Deadline], T], *, tokens: GitTokens = NO_TOKENS,
                    bound: float = LOCAL_TIMEOUT) -> T:
    """``call(deadline)`` in a worker thread, bounded; libgit2's errors as ``GitError`` with nothing secret."""
    deadline = Deadline(bound)
    pygit2 = lib()
    try:
        async with asyncio.timeout(bound + 5):
            return await asyncio.to_thread(_translated, call, deadline, tokens, pygit2.GitError)
    except TimeoutError:
        raise GitError(f"the git operation did not finish within {bound:g} s") from None
    finally:
        deadline.cancelled.set()  # a call still running stops at its next progress callback


def _translated(call: Callable[[Deadline], T], deadline: Deadline, tokens: GitTokens, lib_error: type) -> T:
    try:
        return call(deadline)
    except PathRefused:
        raise
    except GitError as exc:
        raise GitError(tokens.redact(str(exc))) from None
    except (lib_error, KeyError, ValueError) as exc:
        message = str(exc).strip() or type(exc).__name__
        raise GitError(tokens.redact(message[-2000:])) from None


def local_path(url: str) -> Path:
    """The folder a ``file://`` URL names."""
    return Path(unquote(urlsplit(url).path))
