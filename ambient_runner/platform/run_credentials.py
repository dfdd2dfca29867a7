"""The connected accounts in the run path, the same for every runner: fetched for each run with its sender's
identity (``platform.credentials``), handed to the agent's tools (``platform.credential_store``) and added to the
redaction list the moment they arrive; cleared after the run unless ``KEEP_CREDENTIALS_PERSISTENT`` is set.

A provider that fails is a ``CUSTOM ambient:credential_warning`` event ``{provider, status}`` right after
``RUN_STARTED``, and the run goes on. In a shared session each run replaces the whole delivery with its own sender's
accounts, so nothing of the previous sender stays reachable. Runs of several threads at once share the one
delivery (the agent CLIs are per pod): the last run to start decides it, and it is cleared when no run is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence

from ag_ui.core import BaseEvent, CustomEvent

from ambient_runner.platform.credential_store import CredentialStore, secrets_of
from ambient_runner.platform.credentials import CredentialSource, CredentialWarning
from ambient_runner.process.environment import add_agent_environment
from ambient_runner.runs.manager import ActiveRun, RunManager
from ambient_runner.settings import RunnerSettings

log = logging.getLogger(__name__)
WARNING_EVENT = "ambient:credential_warning"


class RunCredentials:
    def __init__(self, settings: RunnerSettings, runs: RunManager, source: CredentialSource,
                 store: CredentialStore) -> None:
        self.runs = runs
        self.source = source
        self.store = store
        self.keep = settings.keep_credentials
        self._holding: set[str] = set()  # run ids whose accounts are delivered
        self._lock = asyncio.Lock()

    @classmethod
    def for_platform(cls, settings: RunnerSettings, runs: RunManager) -> RunCredentials | None:
        """On the platform (a backend inside the cluster), the run path's credential steps; else ``None``."""
        mcp = settings.mcp_servers
        source = CredentialSource(settings, [name for name, server in mcp.servers.items() if any(
            ref.startswith(f"MCP_{name.upper().replace('-', '_')}_") for ref in server.references())])
        if not source.enabled:
            return None
        hosts = settings.runner_github_hosts.split(",")
        return cls(settings, runs, source, CredentialStore(settings.runner_credentials_dir, hosts))

    def install(self) -> Callable[[], None]:
        """Write the store, join the run path and the agents' environment; returns what undoes it."""
        self.store.install()
        self.runs.before_run_hooks.append(self.before_run)
        self.runs.after_run_hooks.append(self.after_run)
        remove_environment = add_agent_environment(self.agent_environment)

        def uninstall() -> None:
            remove_environment()
            self.runs.before_run_hooks.remove(self.before_run)
            self.runs.after_run_hooks.remove(self.after_run)
            self.store.clear()

        return uninstall

    def agent_environment(self, referenced: frozenset[str]) -> Mapping[str, str]:
        exported = self.store.exported()
        return self.store.environment() | {name: exported[name] for name in referenced if name in exported}

    async def before_run(self, run: ActiveRun) -> Sequence[BaseEvent]:
        caller = run.turn.caller
        self.runs.redactor.extend(caller.secrets())
        try:
            fetched = await self.source.fetch(caller)
            async with self._lock:
                self.runs.redactor.extend(secrets_of(fetched.values))  # before any tool can print one
                self.store.deliver(fetched.values)
                self._holding.add(run.run_id)
        except Exception:  # noqa: BLE001 - a broken integration never stops a coding run
            log.exception("fetching the connected accounts failed for run %s", run.run_id)
            self.store.clear()
            return [self._event(CredentialWarning("all", "runner error"))]
        return [self._event(w) for w in fetched.warnings]

    async def after_run(self, run: ActiveRun, outcome: str) -> None:
        async with self._lock:
            self._holding.discard(run.run_id)
            if not self.keep and not self._holding:
                self.store.clear()

    @staticmethod
    def _event(warning: CredentialWarning) -> BaseEvent:
        return CustomEvent(name=WARNING_EVENT, value=warning.value())
