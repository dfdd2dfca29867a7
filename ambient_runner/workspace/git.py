"""Running ``git`` for the workspace endpoints: bounded in time, its own message on failure, never a token shown.

Tokens (the platform's ``X-GitHub-Token`` / ``X-GitLab-Token`` headers) are used for one call only, through a
credential helper that reads them from that git process's environment: never in argv, ``.git/config`` or a file.
Only calls that reach a remote get them. The user's and system git config are not read (the agent can write
``~/.gitconfig``), a repository cannot run hooks or an fsmonitor for us, and helpers configured elsewhere are reset.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ambient_runner.process.environment import cli_environment

LOCAL_TIMEOUT = 30.0
REMOTE_TIMEOUT = 120.0
MAX_OUTPUT = 4 * 1024 * 1024
CREDENTIALS_IN_URL = re.compile(r"(://)[^/@\s:]+(:[^/@\s]*)?@")
# Answers git's "get" with a token only over https and only for the host of the URL the call was made for (a
# repository's own config could rewrite the URL to another host): GitLab's token for gitlab hosts, else GitHub's.
HELPER = ('!f() { test "$1" = get || exit 0; host=; proto=; while IFS== read -r k v; do case "$k" in '
          'host) host=$v;; protocol) proto=$v;; esac; done; '
          '[ "$proto" = https ] && [ -n "$host" ] && [ "$host" = "$AMBIENT_GIT_HOST" ] || exit 0; '
          'case "$host" in *gitlab*) t=$AMBIENT_GIT_GITLAB_TOKEN; u=oauth2;; *) t=$AMBIENT_GIT_GITHUB_TOKEN; '
          'u=x-access-token;; esac; [ -n "$t" ] && printf "username=%s\\npassword=%s\\n" "$u" "$t"; }; f')
SAFE_CONFIG = ("credential.helper=", f"credential.helper={HELPER}", "core.fsmonitor=false",
               "core.hooksPath=/dev/null", "protocol.ext.allow=never", "advice.detachedHead=false")


class GitError(RuntimeError):
    """git failed or timed out; the message is git's own (tokens and URL credentials removed)."""


@dataclass(frozen=True)
class GitTokens:
    github: str = ""
    gitlab: str = ""
    host: str = ""  # the only host they are given to (that of the URL the call is for)

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> GitTokens:
        return cls(headers.get("x-github-token", "").strip(), headers.get("x-gitlab-token", "").strip())

    def for_url(self, url: str) -> GitTokens:
        host = (urlsplit(url).hostname or "") if "://" in url else ""
        return GitTokens(self.github, self.gitlab, host)

    def environment(self) -> dict[str, str]:
        if not self.host:
            return {}
        return {k: v for k, v in (("AMBIENT_GIT_GITHUB_TOKEN", self.github), ("AMBIENT_GIT_GITLAB_TOKEN", self.gitlab),
                                  ("AMBIENT_GIT_HOST", self.host)) if v}

    def redact(self, text: str) -> str:
        for token in (self.github, self.gitlab):
            if token:
                text = text.replace(token, "[redacted]")
        return redact_url(text)


NO_TOKENS = GitTokens()


def redact_url(text: str) -> str:
    """``text`` with any ``scheme://user[:secret]@`` credentials removed."""
    return CREDENTIALS_IN_URL.sub(r"\1[redacted]@", text)


async def git(*args: str, cwd: Path, tokens: GitTokens = NO_TOKENS, bound: float = LOCAL_TIMEOUT) -> str:
    """``git args...`` in ``cwd``; its stdout, or ``GitError`` with its stderr."""
    config = [part for item in SAFE_CONFIG for part in ("-c", item)]
    env = cli_environment({"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                           "GIT_ASKPASS": "/bin/false", "SSH_ASKPASS": "/bin/false", **tokens.environment()})
    proc = await asyncio.create_subprocess_exec("git", *config, *args, cwd=cwd, env=env, start_new_session=True,
                                                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(bound):
            out, err = await proc.communicate()
    except TimeoutError:
        raise GitError(f"git {args[0]} did not finish within {bound:g} s") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    if proc.returncode != 0:
        message = err.decode(errors="replace").strip() or f"git {args[0]} exited with code {proc.returncode}"
        raise GitError(tokens.redact(message[-2000:]))
    return out[:MAX_OUTPUT].decode(errors="replace")
