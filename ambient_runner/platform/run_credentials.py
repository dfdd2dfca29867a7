"""The connected accounts in the run path, the same for every runner: fetched for each run with its sender's
identity (``platform.credentials``), handed to the agent's tools (``platform.credential_store``) and added to the
redaction list the moment they arrive; cleared after the run unless ``KEEP_CREDENTIALS_PERSISTENT`` is set.

A provider that fails is a ``CUSTOM ambient:credential_warning`` event ``{provider, status}`` right after
``RUN_STARTED``, and the run goes on. In a shared session each run replaces the whole delivery with its own sender's
accounts, so nothing of the previous sender stays reachable. Runs of several threads at once share the one
delivery (the agent CLIs are per pod, so a tool of one run can use what another run was given): when two people's
runs overlap, the accounts are withdrawn from both until they have ended (the later run gets the warning
``{provider: "all", status: "in use by another person's run"}``), so neither can reach the other's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence

from ag_ui.core import BaseEvent, CustomEvent

from ambient_runner.bridges.caller import Caller
from ambient_runner.platform.credential_secrets import secrets_of
from ambient_runner.platform.credential_store import CredentialStore, account_variable
from ambient_runner.platform.credentials import CredentialSource, CredentialWarning
from ambient_runner.process.environment import add_agent_environment
from ambient_runner.runs.manager import ActiveRun, RunManager
from ambient_runner.settings import RunnerSettings
from ambient_runner.stream.outcome import RunOutcome

log = logging.getLogger(__name__)
WARNING_EVENT = "ambient:credential_warning"
IN_USE = CredentialWarning("all", "in use by another person's run")


class RunCredentials:
    def __init__(self, settings: RunnerSettings, runs: RunManager, source: CredentialSource,
                 store: CredentialStore) -> None:
        self.runs = runs
        self.source = source
        self.store = store
        self.keep = settings.keep_credentials
        self._holding: dict[str, str] = {}  # run id -> the user whose accounts it runs with
        self._given_to_cli: dict[str, str] = {}  # account variables the running CLI's MCP servers were started with
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
        secret = settings.google_oauth_client_secret
        oauth_client = (settings.google_oauth_client_id, secret.get_secret_value() if secret else "")
        return cls(settings, runs, source, CredentialStore(settings.runner_credentials_dir, hosts, oauth_client))

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
            self.store.remove()

        return uninstall

    def agent_environment(self, referenced: frozenset[str]) -> Mapping[str, str]:
        """What a CLI gets at its start: the store's paths, and the current value of each account variable its MCP
        servers refer to (remembered: when one changes, the CLI is restarted before the next run)."""
        exported = self.store.exported()
        given = {name: exported.get(name, "") for name in referenced if account_variable(name)}
        self._given_to_cli.update(given)
        return self.store.environment() | given

    async def _restart_for_mcp(self, run: ActiveRun) -> None:
        """An MCP server's environment is fixed when the CLI starts it: when a variable one refers to changed, the
        CLI is stopped, so this run starts it (and its MCP servers) again; its sessions resume as after a crash. Not
        while another run streams or a turn waits for a person (their CLI would end too)."""
        exported = self.store.exported()
        changed = sorted(n for n, v in self._given_to_cli.items() if exported.get(n, "") != v)
        bridge = self.runs.bridge
        stop = getattr(bridge, "stop_cli", None)
        if not changed or stop is None:
            return
        others = [r for r in self.runs.active_runs() if r is not run]
        if others or self.runs.hitl.paused_threads():
            log.info("run %s: MCP credentials changed (%s) but other turns are live; the CLI keeps the old ones",
                     run.run_id, ", ".join(changed))
            return
        log.info("run %s: MCP credentials changed (%s): restarting the CLI", run.run_id, ", ".join(changed))
        self._given_to_cli.clear()
        await stop()

    async def before_run(self, run: ActiveRun) -> Sequence[BaseEvent]:
        caller = run.turn.caller
        self.runs.redactor.extend([*caller.secrets(), self.source.bot_token()])  # the identities sent
        if self._held_by_another(caller):
            return await self._shared_by_two(run, caller)
        try:
            fetched = await self.source.fetch(caller)
        except Exception:  # noqa: BLE001 - a broken integration never stops a coding run
            log.exception("fetching the connected accounts failed for run %s", run.run_id)
            async with self._lock:  # nobody's accounts for this run (not the previous sender's either)
                self.store.clear()
                self._holding[run.run_id] = caller.user_id
            return [self._event(CredentialWarning("all", "runner error"))]
        async with self._lock:
            if self._held_by_another(caller):  # another person's run started meanwhile
                return await self._shared_by_two(run, caller, locked=True)
            self.runs.redactor.extend(secrets_of(fetched.values))  # before any tool can print one
            self.store.deliver(fetched.values)
            self._holding[run.run_id] = caller.user_id
            await self._restart_for_mcp(run)
        return [self._event(w) for w in fetched.warnings]

    def _held_by_another(self, caller: Caller) -> bool:
        return any(user != caller.user_id for user in self._holding.values())

    async def _shared_by_two(self, run: ActiveRun, caller: Caller, locked: bool = False) -> list[BaseEvent]:
        """Two people's runs at once share the agent's tools: neither gets any account until both have ended."""
        async with contextlib.AsyncExitStack() as stack:
            if not locked:
                await stack.enter_async_context(self._lock)
            self.store.clear()
            self._holding[run.run_id] = caller.user_id
        log.warning("run %s: another person's run is active; the connected accounts are withdrawn until both end",
                    run.run_id)
        return [self._event(IN_USE)]

    async def after_run(self, run: ActiveRun, outcome: RunOutcome | None) -> None:
        async with self._lock:
            self._holding.pop(run.run_id, None)
            if not self.keep and not self._holding:
                self.store.clear()

    @staticmethod
    def _event(warning: CredentialWarning) -> BaseEvent:
        return CustomEvent(name=WARNING_EVENT, value=warning.value())
