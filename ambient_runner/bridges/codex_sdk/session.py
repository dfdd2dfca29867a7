"""The session worker: one ``codex app-server`` (``openai_codex.AsyncCodex``) for the pod's life.

* Started lazily on the first turn, restarted when it has died (the next turn gets a fresh one).
* Launched through ``setsid`` (``CodexConfig.launch_args_override``) so the app-server and every command it
  spawns live in their own process group; ``close()`` lets the SDK terminate it and then ends the group
  (``ProcessGroup.kill_and_reap``: SIGKILL, the app-server waited for, the tools it left reaped), so no codex
  process or tool child survives. (The SDK's own ``Popen`` does not start a new session, and its ``close()``
  only terminates the leader.)
* Threads: ``thread_start`` for a new AG-UI thread, ``thread_resume`` (by the persisted Codex thread id)
  the first time a thread is used in this process, then the cached ``AsyncThread``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from openai_codex import ApprovalMode, AsyncCodex, AsyncThread, CodexConfig
from openai_codex.api import AsyncTurnHandle, ThreadStartParams, TurnStartParams
from openai_codex.generated.v2_all import AskForApproval, AskForApprovalValue, UserInput

from ambient_runner.bridges.codex_sdk import sdk_private as sdk
from ambient_runner.bridges.codex_sdk.sdk_private import AnsweringClient, OnRequest
from ambient_runner.process.descendants import tagged
from ambient_runner.process.group import PopenLeader, ProcessGroup

log = logging.getLogger(__name__)


def _drain_global_notifications(codex: AsyncCodex) -> None:
    """Consume notifications that belong to no turn (thread/started, account/rateLimits/updated, ...).

    The SDK queues them in an unbounded queue that nothing reads unless the caller does, which would grow
    for the pod's life. Ends when the app-server's transport closes (the SDK then raises from the queue).
    """
    next_notification = sdk.notification_reader(codex)
    if next_notification is None:
        return
    while True:
        try:
            notification = next_notification()
        except BaseException:  # noqa: BLE001 - transport closed: the app-server is gone
            return
        log.debug("codex notification outside a turn: %s", getattr(notification, "method", "?"))


class AppServer:
    """The long-lived Codex app-server and the threads opened on it."""

    def __init__(self, *, codex_bin: Path, codex_home: Path, workspace: Path, env: Mapping[str, str],
                 path_dir: Path | None = None, overrides: Sequence[str] = (),
                 on_request: OnRequest | None = None) -> None:
        self.on_request = on_request  # the app-server's requests (approvals): see ``requests``
        self.codex_bin = codex_bin
        self.overrides = tuple(overrides)  # ``-c key=value``: rank above the workspace's .codex/config.toml
        self.codex_home = codex_home
        self.workspace = workspace
        self.env = dict(env)
        self.path_dir = path_dir
        self._codex: AsyncCodex | None = None
        self._pgid: int | None = None
        self.tag: str | None = None  # the latest app-server's PROCESS_TAG (process.descendants)
        self._threads: dict[str, AsyncThread] = {}
        self._lock = asyncio.Lock()
        self._last_proc: Any = None  # the latest app-server's Popen, kept to tell how a failed start-up ended
        self._failed: AsyncCodex | None = None  # an app-server that failed to start (for its stderr)

    # ----- lifecycle -------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        proc = sdk.process_of(self._codex) if self._codex is not None else None
        return proc is not None and proc.poll() is None

    @property
    def codex(self) -> AsyncCodex | None:
        """The running SDK client, or ``None``."""
        return self._codex if self.alive else None

    @property
    def pgid(self) -> int | None:
        return self._pgid

    def stderr_tail(self, lines: int = 20) -> str:
        return sdk.stderr_tail(self._codex or self._failed, lines)

    async def ensure(self) -> AsyncCodex:
        """The running app-server, started (or restarted after it died) on demand."""
        async with self._lock:
            if self._codex is not None and self.alive:
                return self._codex
            if self._codex is not None:
                log.warning("codex app-server died; restarting. stderr: %s", self.stderr_tail(5))
                await self._close_locked()
            config = self._config()
            codex = AsyncCodex(config)
            if self.on_request is not None:  # its requests are answered off the reader thread
                sdk.use_sync_client(codex, AnsweringClient(config, asyncio.get_running_loop(), self.on_request))
            try:
                await sdk.start_process(codex)  # spawn first: the SDK drops its process if the handshake fails
                self._last_proc = sdk.process_of(codex)
                await sdk.ensure_initialized(codex)  # start + initialize handshake now, not mid-turn
            except BaseException:
                self._failed = codex  # its stderr says why
                await self._kill(codex)
                raise
            self._codex, self._failed = codex, None
            proc = sdk.process_of(codex)
            self._pgid = proc.pid if proc is not None else None
            threading.Thread(target=_drain_global_notifications, args=(codex,), name="codex-global-drain",
                             daemon=True).start()
            return codex

    def _config(self) -> CodexConfig:
        env = dict(self.env)
        if self.path_dir is not None:
            env["PATH"] = os.pathsep.join([str(self.path_dir), env.get("PATH", "")])
        setsid = shutil.which("setsid") or "/usr/bin/setsid"
        argv = (setsid, str(self.codex_bin), "app-server", *self.overrides, "--listen", "stdio://")
        # The SDK merges ``env`` over os.environ; blank out every other variable so the runner's own
        # secrets never reach the app-server (docs/contracts.md section 5).
        full_env, self.tag = tagged({name: "" for name in os.environ if name not in env} | env)
        return CodexConfig(launch_args_override=argv, cwd=str(self.workspace), env=full_env)

    def respond(self, request_id: Any, result: dict[str, Any]) -> None:
        """Answer one of the app-server's requests (``on_request``)."""
        sync = sdk.sync_client(self._codex)
        if isinstance(sync, AnsweringClient):
            sync.respond(request_id, result)

    async def close(self) -> None:
        async with self._lock:
            await self._close_locked()

    async def _close_locked(self) -> None:
        codex, self._codex = self._codex, None
        self._threads.clear()
        if codex is not None:
            await self._kill(codex)

    async def _kill(self, codex: AsyncCodex) -> None:
        proc = sdk.process_of(codex) or self._last_proc
        pgid = proc.pid if proc is not None else self._pgid
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(codex.close()), timeout=5)
        if pgid is not None:  # the tools it ran were re-parented to us (subreaper): reaped too
            await ProcessGroup(pgid, PopenLeader(proc) if proc is not None else None).kill_and_reap()
        self._pgid = None

    async def exit_code(self) -> int | None:
        """A dead app-server's exit code (negative: the signal that killed it); None if unknown."""
        proc = (sdk.process_of(self._codex) if self._codex is not None else None) or self._last_proc
        if proc is None:
            return None
        with contextlib.suppress(Exception):
            await asyncio.to_thread(proc.wait, 2)
        return proc.returncode

    # ----- threads ---------------------------------------------------------------------------------------
    async def thread(self, codex_thread_id: str | None, *, model: str | None,
                     tools: Sequence[dict[str, Any]] = (), cwd: Path | None = None) -> AsyncThread:
        """The Codex thread: resumed by id (first use in this app-server), or a new one, offered ``tools`` (dynamic
        tools: Codex fixes them when a thread starts), working in ``cwd`` (default: the workspace; each turn names
        its own too, ``start_turn``)."""
        codex = await self.ensure()
        if codex_thread_id is not None and codex_thread_id in self._threads:
            return self._threads[codex_thread_id]
        folder = str(cwd or self.workspace)
        options: dict[str, Any] = {"approval_mode": ApprovalMode.deny_all, "cwd": folder, "model": model}
        if codex_thread_id is not None:
            thread = await codex.thread_resume(codex_thread_id, **options)
        elif tools:
            thread = await _start_with_tools(codex, tools, cwd=folder, model=model)
        else:
            thread = await codex.thread_start(**options)
        self._threads[thread.id] = thread
        return thread


async def start_turn(thread: AsyncThread, run_input: Any, *, ask: bool, cwd: Path, plan: bool = False,
                     effort: Any = None, model: str | None = None, sandbox: Any = None) -> AsyncTurnHandle:
    """``thread.turn(...)`` with the turn's approval policy: ``untrusted`` when the run asks for approvals (every
    command that is not known to be safe, every file change), else ``never`` (the SDK's high-level ``turn`` offers
    only its own two modes); ``cwd``: where the turn works (and the thread's later turns: a workflow switch moves
    the thread's next turn into the new folder); ``plan``: also Codex's plan collaboration mode (an experimental
    turn field), in which the model may ask the person questions (``request_user_input``)."""
    codex = sdk.codex_of(thread)
    wire_input, tool_output = sdk.to_wire_turn_input(run_input)
    await sdk.ensure_initialized(codex)
    policy = AskForApprovalValue.untrusted if ask else AskForApprovalValue.never
    params = TurnStartParams(thread_id=thread.id, input=[UserInput.model_validate(item) for item in wire_input],
                             tool_output=tool_output,
                             approval_policy=AskForApproval(root=policy), effort=effort, model=model, cwd=str(cwd),
                             sandbox_policy=sdk.sandbox_policy(sandbox))
    wire: dict[str, Any] = params.model_dump(by_alias=True, exclude_none=True, mode="json")
    if plan:
        wire["collaborationMode"] = {"mode": "plan", "settings": {"model": model, "developer_instructions": None}}
    return await sdk.start_turn(codex, thread.id, wire_input, wire)


STEER_TIMEOUT = 10.0  # s for the app-server to answer turn/steer


async def steer_turn(handle: AsyncTurnHandle, text: str) -> bool:
    """``turn/steer``: ``text`` as more user input for the running turn, with the turn's id as the expected one
    (Codex refuses it once that turn is no longer the thread's active turn: False, and the core queues it)."""
    try:
        await asyncio.wait_for(handle.steer(text), STEER_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - the turn ended (or is not active yet), or the app-server is gone
        log.info("codex turn/steer into turn %s refused: %s", handle.id, exc)
        return False
    return True


async def _start_with_tools(codex: AsyncCodex, tools: Sequence[dict[str, Any]], *, cwd: str,
                            model: str | None) -> AsyncThread:
    """``codex.thread_start`` with dynamic tools (an experimental field the SDK's high-level call does not take)."""
    await sdk.ensure_initialized(codex)
    params = ThreadStartParams(approval_policy=AskForApproval(root=AskForApprovalValue.never), cwd=cwd,
                               model=model).model_dump(by_alias=True, exclude_none=True, mode="json")
    started = await sdk.thread_start(codex, {**params, "dynamicTools": list(tools)})
    return AsyncThread(codex, started.thread.id)
