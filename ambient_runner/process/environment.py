"""The environment a CLI process gets: an allowlist of the runner's own variables plus what the bridge adds.

Nothing else of the runner's environment is passed, so the runner's own secrets (``AGUI_TOKEN``, storage
credentials, other runners' API keys) never reach the CLI or the tools it runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

BASE_VARIABLES = (
    "PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def cli_environment(extra: Mapping[str, str], passthrough: Iterable[str] = ()) -> dict[str, str]:
    """Allowlisted runner variables (``BASE_VARIABLES``, ``LC_*`` and ``passthrough``) overlaid with ``extra``."""
    allowed = set(BASE_VARIABLES) | set(passthrough)
    env = {k: v for k, v in os.environ.items() if k in allowed or k.startswith("LC_")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"NO_COLOR": "1", "TERM": "dumb", "GIT_TERMINAL_PROMPT": "0", "CI": "true"})
    env.update(extra)
    for name in ("NO_PROXY", "no_proxy"):  # the CLI's traffic to the runner's own servers never takes a proxy
        present = [h for h in env.get(name, "").split(",") if h.strip()]
        env[name] = ",".join([*present, *(h for h in LOOPBACK_HOSTS if h not in present)])
    return env


# What the agent CLIs get beside ``cli_environment`` (the connected accounts' paths, ``platform.run_credentials``):
# each source is asked at every spawn, with the names the CLI's MCP servers refer to.
AgentEnvironmentSource = Callable[[frozenset[str]], Mapping[str, str]]
_agent_sources: list[AgentEnvironmentSource] = []


def add_agent_environment(source: AgentEnvironmentSource) -> Callable[[], None]:
    """Add ``source`` to every agent CLI's environment from now on; returns the function that removes it."""
    _agent_sources.append(source)
    return lambda: _agent_sources.remove(source) if source in _agent_sources else None


def agent_environment(extra: Mapping[str, str], passthrough: Iterable[str] = ()) -> dict[str, str]:
    """An agent CLI's environment: ``cli_environment`` plus what the sources add (not for the runner's own git)."""
    names = frozenset(passthrough)
    env = cli_environment(extra, names)
    for source in _agent_sources:
        env.update(source(names))
    return env


def agent_values(names: Iterable[str]) -> dict[str, str]:
    """``os.environ`` with what the sources give for ``names`` over it (where a CLI's configuration is resolved in
    the runner, as Codex's MCP aliases are)."""
    wanted = frozenset(names)
    values = dict(os.environ)
    for source in _agent_sources:
        values.update({k: v for k, v in source(wanted).items() if k in wanted})
    return values
