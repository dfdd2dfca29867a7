"""Git for the workspace endpoints, through libgit2 (pygit2) in the git worker (``git_worker``, one confined process per
operation, started by ``run_worker``): no ``git`` process is started.

That makes the endpoints safe by construction against a repository (or the agent) that configured commands: libgit2
runs no filter driver (``filter.*.clean``/``process``), no hook, no fsmonitor, no pager or editor, no
``uploadpack``/``receivepack`` and no ``core.sshCommand``; it reads no user, XDG or system config (the search path is
emptied) and only the repository's own, whose values can change no URL the runner fetches (checked after the remote
is made). Tokens (the platform's ``X-GitHub-Token`` / ``X-GitLab-Token``) reach only that worker: libgit2 asks for
them through a callback, which answers only over https and only for the host of the URL the call was made for.

Features of git the endpoints therefore do not honour: filter drivers (LFS pointers stay pointers in a clone and in
``git-status``), textconv, hooks, ssh/git/ext transports, ``url.*.insteadOf`` rewrites, shallow ``file://`` clones.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import unquote, urlsplit

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ag_ui_cli_common.json_types import JsonValue
from ambient_runner.stream.encoding import redact_url
from ambient_runner.workspace.paths import LinkRefused, Workspace

if TYPE_CHECKING:
    import pygit2
    from pygit2 import UserPass
    from pygit2.enums import CredentialType
    from pygit2.remotes import TransferProgress

log = logging.getLogger(__name__)

LOCAL_TIMEOUT = 30.0
REMOTE_TIMEOUT = 120.0


class GitError(RunnerError, RuntimeError):
    """A git operation failed or timed out; the message is libgit2's own (tokens and URL credentials removed)."""

    code = ErrorCode.GIT_FAILED


@dataclass(frozen=True)
class GitTokens:
    github: str = ""
    gitlab: str = ""

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


class WorkerArgs(TypedDict, total=False):
    """What a git worker operation reads (each operation its own keys), as JSON carries it to the worker."""

    folder: str  # the repository's work tree (status, branches, remote, configure)
    shown: str  # the folder as the caller named it, for messages
    exists: bool  # configure: the folder is a repository already
    url: str  # configure, clone
    branch: str | None  # configure: always a branch (check_branch); clone: None for the remote's default
    destination: str  # clone: the fresh folder it clones into
    depth: int | None  # clone
    entries: list[tuple[str, str]]  # describe: (name, folder) of each repository of repos/ (lists, once decoded)
    proxy: str | None  # added by run_worker: the pod's egress proxy


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
    """Bounds a libgit2 transfer from inside: its progress callbacks stop it once the time is up (the runner also
    kills the worker at its bound)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self.ends:
            raise GitError(f"the git operation did not finish within {self.seconds:g} s")


def callbacks(url: str, tokens: GitTokens, deadline: Deadline) -> pygit2.RemoteCallbacks:
    pygit2 = lib()
    host = urlsplit(url).hostname or ""

    class Callbacks(pygit2.RemoteCallbacks):  # type: ignore[name-defined]  # pygit2: the module lib() returns
        asked = 0

        def credentials(self, request_url: str, username: str | None, allowed: CredentialType) -> UserPass:
            self.asked += 1
            found = tokens.for_request(request_url, host)
            if found is None or self.asked > 1:
                raise GitError("the remote asks for credentials that were refused or not sent "
                               "(send X-GitHub-Token or X-GitLab-Token for an https remote)")
            return pygit2.UserPass(*found)

        def transfer_progress(self, stats: TransferProgress) -> None:
            deadline.check()

        def sideband_progress(self, text: str) -> None:
            deadline.check()

    return Callbacks()


TLS_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy")  # the pod's egress proxy, never one a repository's config names
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds ambient_runner, for the worker
# What the worker may read once confined: the system's own files (TLS roots, name lookups, shared libraries) and its
# Python; never the workspace beyond what a call names, nor the runner's state dir.
SYSTEM_READABLE = tuple(dict.fromkeys(Path(p) for p in (
    "/etc", "/usr", "/lib", "/lib64", "/dev/null", "/dev/urandom", sys.prefix, sys.base_prefix)))



async def run_worker(op: str, args: WorkerArgs, workspace: Workspace, *, writable: list[Path],
                     readable: tuple[Path, ...] = (), tokens: GitTokens = NO_TOKENS,
                     bound: float = LOCAL_TIMEOUT) -> JsonValue:
    """One libgit2 operation in the git worker (``git_worker``), confined to ``writable`` (each checked again there,
    where it really is: inside the workspace, outside its state dir) and ``readable``, killed at ``bound``; its
    refusals as ``LinkRefused``, its failures as ``GitError`` with nothing secret."""
    proxy = next((os.environ[name] for name in PROXY_VARIABLES if os.environ.get(name)), None)
    args = {**args, "proxy": proxy}
    request = json.dumps({"op": op, "args": args, "writable": [str(p) for p in writable],
                          "root": str(workspace.root), "state_dir": str(workspace.state_dir),
                          "readable": [str(p) for p in (*SYSTEM_READABLE, *readable)], "bound": bound,
                          "tokens": {"github": tokens.github, "gitlab": tokens.gitlab}}).encode()
    tls = {name: os.environ[name] for name in TLS_VARIABLES if os.environ.get(name)}  # the pod's own trust roots
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": "/nonexistent",
           "PYTHONPATH": str(PACKAGE_ROOT), "PYTHONDONTWRITEBYTECODE": "1", **tls}
    readable = (*readable, *(Path(value) for value in tls.values()))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ambient_runner.workspace.git_worker", cwd="/", env=env, start_new_session=True,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(bound + 5):
            out, err = await proc.communicate(request)
    except TimeoutError:
        raise GitError(f"the git operation did not finish within {bound:g} s") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    try:
        answer = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        log.warning("the git worker ended with code %s: %s", proc.returncode, tokens.redact(err.decode()[-500:]))
        raise GitError(f"the git operation failed (its worker ended with code {proc.returncode})") from None
    if "ok" in answer:
        return answer["ok"]
    message = tokens.redact(str(answer.get("message", "")))
    if answer.get("error") == "refused":
        raise LinkRefused(message)
    raise GitError(message)


def local_path(url: str) -> Path:
    """The folder a ``file://`` URL names."""
    return Path(unquote(urlsplit(url).path))
