"""Fetching the person's connected accounts from the platform's backend before a run.

Each provider is one ``GET``: ``{BACKEND_API_URL}/projects/{project}/agentic-sessions/{session}/credentials/{kind}``
(``github``, ``gitlab``, ``jira``, ``google``, ``coderabbit``, ``gerrit``, ``mcp/{server}``), or, for a kind that
``CREDENTIAL_IDS`` (a JSON map kind -> id) names, ``{BACKEND_API_URL}/api/ambient/v1/projects/{project}/credentials/
{id}/token``; a kubeconfig arrives only that way (the backend has no route for it). All are sent at once and the
whole fetch is bounded (``RUNNER_CREDENTIALS_TIMEOUT``).

Identity: the run's caller (``Authorization: <X-Caller-Token>``, ``X-Runner-Current-User: <X-Current-User-ID>``),
else the bot token read fresh from ``RUNNER_BOT_TOKEN_FILE``. A 401/403 with the caller's token is tried once more
with the bot token (and the user header). A 404 is an account the person has not connected: nothing, no warning.
Anything else that fails is a ``CredentialWarning`` (provider and status, never a token): the run goes on.

Nothing is sent to a backend outside the cluster (``*.svc``, ``*.svc.cluster.local``, loopback): ``BACKEND_API_URL``
is the platform's, but an environment override must not carry a person's token elsewhere. Providers served by a
credential sidecar (``CREDENTIAL_MCP_URLS``) are not fetched at all.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx

from ag_ui_cli_common.json_types import JsonValue
from ambient_runner.bridges.caller import Caller
from ambient_runner.platform.first_turn import read_bot_token
from ambient_runner.settings import RunnerSettings

log = logging.getLogger(__name__)
PROVIDERS = ("github", "gitlab", "jira", "google", "coderabbit", "gerrit")
ONLY_BY_ID = ("kubeconfig",)  # no session route: fetched only when CREDENTIAL_IDS names one
IN_CLUSTER_SUFFIXES = (".svc", ".svc.cluster.local")
AUTH_REFUSED = (401, 403)


@dataclass(frozen=True)
class CredentialWarning:
    provider: str
    status: str  # the HTTP status, or what went wrong without one ("unreachable", "timeout", "invalid response")

    def value(self) -> dict[str, str]:
        return {"provider": self.provider, "status": self.status}


@dataclass
class Fetched:
    """What one run's fetch brought: each provider's answer (``None``: not connected) and the warnings."""

    values: dict[str, JsonValue] = field(default_factory=dict)
    warnings: list[CredentialWarning] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)  # providers whose fetch failed (their previous value is dropped)


def in_cluster_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(IN_CLUSTER_SUFFIXES):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_json_map(raw: str, name: str) -> dict[str, str]:
    """A platform variable holding a JSON object of strings; anything else is a warning and nothing."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        log.warning("%s is not valid JSON; it is ignored", name)
        return {}
    if not isinstance(value, dict):
        log.warning("%s is not a JSON object; it is ignored", name)
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, (str, int))}


class CredentialSource:
    """The backend's credential endpoints for this session, as the settings describe them."""

    def __init__(self, settings: RunnerSettings, mcp_servers: Iterable[str] = ()) -> None:
        self.base = settings.backend_api_url.strip().rstrip("/")
        self.project = settings.project
        self.session = settings.session_id
        self.bot_token_file: Path = settings.runner_bot_token_file
        self.timeout = settings.runner_credentials_timeout
        self.ids = parse_json_map(settings.credential_ids, "CREDENTIAL_IDS")
        self.sidecar = set(parse_json_map(settings.credential_mcp_urls, "CREDENTIAL_MCP_URLS"))
        self.mcp_servers = tuple(mcp_servers)
        self.reason_off = self._reason_off()
        if self.reason_off and self.base:
            log.warning("connected accounts are not fetched: %s", self.reason_off)

    def _reason_off(self) -> str | None:
        if not self.base:
            return "BACKEND_API_URL is not set"
        host = urlsplit(self.base).hostname or ""
        if not in_cluster_host(host):
            return (f"BACKEND_API_URL's host {host!r} is outside the cluster (only *.svc, *.svc.cluster.local and "
                    "loopback get a person's identity)")
        if not self.project:
            return "PROJECT_NAME is not set"
        return None

    @property
    def enabled(self) -> bool:
        return self.reason_off is None

    def kinds(self) -> list[str]:
        """What a run fetches: every provider not served by a sidecar, kinds with an id, the MCP servers."""
        kinds = [p for p in PROVIDERS if p not in self.sidecar]
        kinds += [k for k in ONLY_BY_ID if k in self.ids and k not in self.sidecar]
        kinds += [f"mcp/{name}" for name in self.mcp_servers if f"mcp/{name}" not in self.sidecar]
        return kinds

    def url(self, kind: str) -> str:
        project = quote(self.project, safe="")
        if kind in self.ids:
            return f"{self.base}/api/ambient/v1/projects/{project}/credentials/{quote(self.ids[kind], safe='')}/token"
        return (f"{self.base}/projects/{project}/agentic-sessions/{quote(self.session, safe='')}/credentials/"
                f"{'/'.join(quote(part, safe='') for part in kind.split('/'))}")

    async def fetch(self, caller: Caller) -> Fetched:
        """Every kind at once, within the timeout; a provider still out when it expires is a ``timeout``."""
        fetched = Fetched()
        if not self.enabled:
            return fetched
        kinds = self.kinds()
        async with httpx.AsyncClient(timeout=self.timeout, trust_env=False, follow_redirects=False) as client:
            tasks = {kind: asyncio.create_task(self._one(client, kind, caller)) for kind in kinds}
            done, pending = await asyncio.wait(tasks.values(), timeout=self.timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        for kind, task in tasks.items():
            value: JsonValue
            problem: str | None
            if task in pending:
                value, problem = None, "timeout"
            else:
                value, problem = task.result()
            if problem is not None:
                fetched.failed.add(kind)
                fetched.warnings.append(CredentialWarning(kind, problem))
                log.warning("%s credentials could not be fetched: %s", kind, problem)
            elif value is not None:
                fetched.values[kind] = value
        return fetched

    async def _one(self, client: httpx.AsyncClient, kind: str, caller: Caller) -> tuple[JsonValue, str | None]:
        url = self.url(kind)
        try:
            response = await client.get(url, headers=self._headers(caller))
            if response.status_code in AUTH_REFUSED and caller.token:
                log.info("%s credentials: the caller's token was refused (HTTP %d); trying the bot token", kind,
                         response.status_code)
                response = await client.get(url, headers=self._headers(Caller("", caller.user_id)))
        except httpx.TimeoutException:
            return None, "timeout"
        except httpx.HTTPError as exc:
            return None, f"unreachable ({type(exc).__name__})"
        except Exception as exc:  # noqa: BLE001 - whatever else goes wrong is this provider's warning, not the run's
            return None, f"runner error ({type(exc).__name__})"
        if response.status_code == 404:
            return None, None
        if response.status_code != 200:
            return None, str(response.status_code)
        try:
            value = response.json()
        except ValueError:
            return None, "invalid response"
        if not isinstance(value, (dict, list)):
            return None, "invalid response"
        return value, None

    def bot_token(self) -> str:
        """The platform's bot token, read fresh (kubelet rotates the mounted file)."""
        return read_bot_token(self.bot_token_file)

    def _headers(self, caller: Caller) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if caller.token:
            headers["Authorization"] = caller.token
        else:
            bot = self.bot_token()
            if bot:
                headers["Authorization"] = f"Bearer {bot}"
        if caller.user_id:
            headers["X-Runner-Current-User"] = caller.user_id
        return headers
