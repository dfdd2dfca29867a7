"""The scripts the agent's tools run to read the connected accounts at use time (``platform.credential_store``
writes them into its directory): git's credential helper, the ``BASH_ENV`` script and Claude Code's
``CLAUDE_ENV_FILE``. Only paths are baked in; every token is read from the store's files when a tool runs.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

HELPER = """#!/bin/sh
# git credential helper of ambient-runner: the connected account's current token for this host, read at each call.
test "$1" = get || exit 0
host=; proto=
while IFS='=' read -r k v; do case "$k" in host) host=$v;; protocol) proto=$v;; esac; done
store={store}
case "$proto" in
  https) ;;
  http) case "$host" in 127.0.0.1|127.0.0.1:*|localhost|localhost:*|"[::1]"|"[::1]":*) ;; *) exit 0;; esac;;
  *) exit 0;;
esac
kind=
gitlab_host=$(cat "$store/gitlab/host" 2>/dev/null)
if [ -n "$gitlab_host" ] && [ "$host" = "$gitlab_host" ]; then kind=gitlab
else
  case "$host" in
    gitlab.com|*.gitlab.com) kind=gitlab;;
    {github_cases}) kind=github;;
  esac
fi
[ -n "$kind" ] || exit 0
token=$(cat "$store/$kind/token" 2>/dev/null)
[ -n "$token" ] || exit 0
user=x-access-token
[ "$kind" = gitlab ] && user=oauth2
printf 'username=%s\\npassword=%s\\n' "$user" "$token"
"""

# Sourced by every non-interactive bash the tools start (BASH_ENV): the current variables, and the credential
# helper again when the CLI reset git's helpers for its shells after ours (Gemini appends credential.helper= to
# GIT_CONFIG_* for every shell command; the helper is the runner's own, not one a repository configured).
BASH_ENV = """__ambient_helper={helper}
__ambient_last=
__ambient_count=${GIT_CONFIG_COUNT:-0}
case "$__ambient_count" in ''|*[!0-9]*) __ambient_count=0;; esac
for ((__ambient_i = 0; __ambient_i < __ambient_count; __ambient_i++)); do
  __ambient_key=GIT_CONFIG_KEY_$__ambient_i __ambient_value=GIT_CONFIG_VALUE_$__ambient_i
  [ "${!__ambient_key}" = credential.helper ] && __ambient_last=${!__ambient_value}
done
if [ "$__ambient_last" != "$__ambient_helper" ]; then
  export "GIT_CONFIG_KEY_$__ambient_count=credential.helper" "GIT_CONFIG_VALUE_$__ambient_count=$__ambient_helper"
  export GIT_CONFIG_COUNT=$((__ambient_count + 1))
fi
unset __ambient_helper __ambient_last __ambient_count __ambient_i __ambient_key __ambient_value
[ -r {exports} ] && . {exports}
"""


def helper_script(store: Path, github_hosts: Iterable[str]) -> str:
    """git's ``credential.helper``: GitHub's token for ``github_hosts`` (case patterns), GitLab's for GitLab hosts."""
    return HELPER.replace("{store}", shlex.quote(str(store))).replace("{github_cases}", "|".join(github_hosts))


def bash_env_script(helper: Path, exports: Path) -> str:
    return BASH_ENV.replace("{helper}", shlex.quote(str(helper))).replace("{exports}", shlex.quote(str(exports)))


def claude_env_script(bash_env: Path) -> str:
    """Claude Code reads ``CLAUDE_ENV_FILE`` once and runs its text before each Bash command: it sources the
    ``BASH_ENV`` script, which is current at every command."""
    quoted = shlex.quote(str(bash_env))
    return f'[ -n "$BASH_VERSION" ] && [ -r {quoted} ] && . {quoted}\n'
