"""One AG-UI thread's Claude Code session: a persistent ``ClaudeSDKClient`` (one CLI process for many turns).

A long-lived reader task per session reads every message the CLI prints and hands it to the turn in progress;
messages that belong to no turn (the tail of an abandoned turn) are dropped. The session survives interrupts;
when the CLI dies, the next turn starts a new process that resumes the same Claude session id. Messages steered
into a running turn are tracked in ``steering``; starting, reading and ending the process in ``cli_process``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, SystemMessage

from ag_ui_claude.sdk_private import buffered_messages
from ag_ui_cli_common import ErrorCode
from ambient_runner.bridges.claude import cli_process
from ambient_runner.bridges.claude.steering import IntermediateResult, SteeredMessages, is_replay, is_result, with_usage
from ambient_runner.bridges.claude.transport import WatchedTransport
from ambient_runner.bridges.contract import BridgeError
from ambient_runner.interrupts.parked import Paused
from ambient_runner.process.descendants import GroupTracker, tagged
from ambient_runner.process.stderr_tail import StderrTail

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 90.0
CONTROL_TIMEOUT = 10.0
DRAIN_TIMEOUT = 15.0
DISCONNECT_TIMEOUT = 25.0
PAUSE_ORDER_BOUND = 1.0  # s a permission request waits for the messages before it to reach the turn
# A turn's first scan for its commands' process groups comes this long after its start, as later ones do: most turns
# (a reply, no command) end sooner and cost no scan (a /proc walk in a worker thread: ~0.85 ms of the runner's CPU a
# turn, and the thread's bid for the GIL during the turn); the groups an earlier turn saw are tracked from the start.
FIRST_TOOL_SCAN = 0.25

# (resume session id, model, stderr callback, effort) -> the options of a new CLI process
OptionsFactory = Callable[[str | None, str | None, Callable[[str], None], str | None], ClaudeAgentOptions]
DEFAULT_PERMISSION_MODE = "default"  # with can_use_tool: every request reaches the runner's gate


@dataclass(frozen=True)
class _End:
    """The CLI's output ended (process exit or read error)."""

    error: BaseException | None = None


def _starts_a_turn(item: Any) -> bool:
    """A message that only comes inside a model turn (which then ends with a ``result``)."""
    kind = item.get("type") if isinstance(item, dict) else None
    return kind in ("assistant", "stream_event") or (kind == "system" and item.get("subtype") == "init")


def _init_session_id(item: Any) -> str | None:
    if isinstance(item, SystemMessage):
        item = {"type": "system", "subtype": item.subtype, **(item.data if isinstance(item.data, dict) else {})}
    if isinstance(item, dict) and item.get("type") == "system" and item.get("subtype") == "init":
        return str(item.get("session_id") or "") or None
    return None


class ClaudeSession:
    def __init__(self, thread_id: str, make_options: OptionsFactory, *, session_id: str | None,
                 on_session_id: Callable[[str], None],
                 between_turns: Callable[[Any], None] | None = None) -> None:
        self.thread_id = thread_id
        self._between_turns = between_turns  # what the CLI prints while no turn runs (background tasks)
        self.session_id = session_id
        self._make_options = make_options
        self._on_session_id = on_session_id
        self._new_session_id: str | None = None  # reported by the CLI, not yet confirmed by a finished turn
        self._tools: GroupTracker | None = None  # the process groups of the running turn's commands
        self._tool_groups: set[int] = set()  # those an earlier turn of this process saw, still there
        self._client: ClaudeSDKClient | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pid: int | None = None
        self._tag: str | None = None  # the CLI's PROCESS_TAG (process.descendants)
        self._transport: WatchedTransport | None = None
        self._process_key = ""
        self._model: str | None = None
        self._effort: str | None = None
        self._permission_mode = DEFAULT_PERMISSION_MODE
        self._queue: asyncio.Queue[Any] | None = None
        self._steers = SteeredMessages()  # steered into the running turn, not taken in by the CLI yet
        self._idle = asyncio.Event()
        self._idle.set()
        self._lock = asyncio.Lock()
        self._stderr: StderrTail | None = None
        self.session_stderr = StderrTail()

    # ----- one turn --------------------------------------------------------------------------------------
    async def turn(self, prompt: str | list[dict[str, Any]], model: str | None, stderr_tail: StderrTail, *,
                   effort: str | None = None, permission_mode: str = DEFAULT_PERMISSION_MODE,
                   interrupted: asyncio.Event | None = None, process_key: str = "") -> AsyncGenerator[Any, None]:
        """Raw stream-json dicts of one turn, up to and including its ``result``.

        ``effort`` is fixed per CLI process (a change restarts it, resuming the session); ``permission_mode``
        (``plan`` for a read-only run) is switched on the live process before the prompt is sent. When
        ``interrupted`` is set by then (the run was stopped while Claude Code was starting), the prompt is not
        sent and the turn yields nothing. ``process_key`` names the rest of the process's options (the frontend
        tools it is offered): a change starts it again, resuming the session."""
        async with self._lock:
            self._stderr = stderr_tail
            try:
                await self._ready_for_turn(model, effort, process_key)
                await self._set_permission_mode(permission_mode)
                if interrupted is not None and interrupted.is_set():
                    return
                async with contextlib.aclosing(self._exchange(prompt, stderr_tail)) as exchange:
                    async for item in exchange:
                        yield item
            finally:
                self._stderr = None

    async def _exchange(self, prompt: str | list[dict[str, Any]], stderr_tail: StderrTail
                        ) -> AsyncGenerator[Any, None]:
        """Send the prompt and pass on what the reader routes to this turn, up to the result."""
        client, transport = self._client, self._transport
        assert client is not None and transport is not None
        if not self._idle.is_set():  # the CLI began a turn of its own since (a background task ended)
            try:
                await asyncio.wait_for(self._idle.wait(), DRAIN_TIMEOUT)
            except TimeoutError:
                await self.close()
                raise BridgeError("Claude Code is still busy with a turn of its own; send the message again",
                                  code=ErrorCode.CLI_BUSY, stderr_tail=stderr_tail.text()) from None
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._queue = queue  # no await since the check: what comes now is this turn's
        self._idle.clear()
        completed = False
        exited = False
        earlier: list[dict[str, Any]] = []  # results of CLI turns this turn went on through (steered messages)
        # Claude Code runs Bash commands in their own process groups: if the CLI dies, they are ended too.
        tools = GroupTracker(self._pid, first_after=FIRST_TOOL_SCAN, known=self._tool_groups, tag=self._tag).start() \
            if self._pid else None
        self._tools = tools
        try:
            try:
                await client.query(prompt if isinstance(prompt, str) else _one_user_message(prompt))
            except Exception as exc:  # the CLI died before it took the prompt (a failed write to its stdin)
                completed = exited = True
                raise await self._exit_error(_End(exc), transport, stderr_tail) from exc
            while True:
                item = await queue.get()
                if isinstance(item, _End):
                    completed = exited = True
                    raise await self._exit_error(item, transport, stderr_tail)
                if isinstance(item, IntermediateResult):
                    earlier.append(item.result)
                    continue
                completed = is_result(item)
                if completed and earlier and isinstance(item, dict):
                    item = with_usage(item, earlier)
                yield item
                if completed:
                    return
        finally:
            if self._queue is queue:
                self._queue = None
                self._steers.clear()
            self._tools = None
            if tools is not None:
                await asyncio.shield(tools.kill() if exited else tools.stop())
                self._tool_groups = set() if exited else tools.live_groups()  # a background command's, say
            if not completed:
                await self._abandon()

    async def steer(self, text: str) -> bool:
        """Write ``text`` as a user message while the turn runs (the SDK's streaming input). The CLI takes it into
        the running turn (with the next tool result) or, when the turn is ending, starts its next turn with it; its
        replay of the message says which, and the running turn goes on until the CLI turn that took it ends."""
        client = self._client
        if client is None or self._queue is None or self._idle.is_set():
            return False
        self._steers.add(text)  # before the write: the CLI's replay of it may come at once
        try:
            await asyncio.wait_for(client.query(text), CONTROL_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - the CLI is gone: the message is queued instead
            log.warning("claude steer failed for thread %s: %s", self.thread_id, exc)
            self._steers.withdraw(text)
            return False
        return True

    async def stop_task(self, task_id: str) -> bool:
        """Ask the CLI to stop one of its background tasks (it then reports the task stopped)."""
        if self._client is None:
            return False
        try:
            await asyncio.wait_for(self._client.stop_task(task_id), CONTROL_TIMEOUT)
            return True
        except Exception as exc:  # noqa: BLE001 - reported to the caller as not stoppable
            log.warning("claude stop_task %s failed for thread %s: %s", task_id, self.thread_id, exc)
            return False

    async def interrupt(self) -> bool:
        """Ask the CLI to stop the current turn; the turn then ends with an interrupted result."""
        client = self._client
        if client is None or self._idle.is_set():
            return False
        if self._tools is not None:
            self._tools.scan()  # a command started a moment ago: note its group before the CLI ends it
        try:
            await asyncio.wait_for(client.interrupt(), CONTROL_TIMEOUT)
            return True
        except Exception as exc:  # noqa: BLE001 - a dead CLI cannot be interrupted; the core escalates
            log.warning("claude interrupt failed for thread %s: %s", self.thread_id, exc)
            return False

    # ----- process lifecycle -----------------------------------------------------------------------------
    async def _set_permission_mode(self, mode: str) -> None:
        if self._client is None or mode == self._permission_mode:
            return
        try:
            # mode: one of the SDK's PermissionMode words (DEFAULT_PERMISSION_MODE, or "plan" from the run options)
            await asyncio.wait_for(self._client.set_permission_mode(mode), CONTROL_TIMEOUT)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - never run a plan-mode turn with write permissions
            raise BridgeError(f"Claude Code did not switch to permission mode {mode!r}: {exc}",
                              code=ErrorCode.CLI_START_FAILED, stderr_tail=self.session_stderr.text()) from exc
        self._permission_mode = mode

    async def _ready_for_turn(self, model: str | None, effort: str | None = None, process_key: str = "") -> None:
        if self._client is not None and not self._idle.is_set():
            # An abandoned turn has not reported its result yet: wait for it, else start over.
            try:
                await asyncio.wait_for(self._idle.wait(), DRAIN_TIMEOUT)
            except TimeoutError:
                log.warning("claude session %s did not finish its previous turn; restarting", self.thread_id)
                await self.close()
        if self._client is not None and self._reader is not None and self._reader.done():
            await self.close()
        if self._client is not None and (effort != self._effort or process_key != self._process_key):
            await self.close()  # process options: start again, resuming the session
        self._process_key = process_key
        if self._client is None:
            await self._connect(model, effort)
        elif model != self._model:
            try:
                await asyncio.wait_for(self._client.set_model(model), CONTROL_TIMEOUT)
                self._model = model
            except Exception:  # noqa: BLE001 - fall back to a new process with the new model
                await self.close()
                await self._connect(model, effort)

    async def _connect(self, model: str | None, effort: str | None = None) -> None:
        options = self._make_options(self.session_id, model, self._on_stderr, effort)
        env, self._tag = tagged(options.env)  # its tools carry it: found even if the CLI dies before a scan
        options = dataclasses.replace(options, env=env)
        transport = WatchedTransport(options)
        client = ClaudeSDKClient(options, transport=transport)
        try:
            await asyncio.wait_for(cli_process.connect_unless_ended(client, transport), CONNECT_TIMEOUT)
        except BaseException as exc:
            died = await transport.exit_code() if isinstance(exc, Exception) else None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.disconnect(), DISCONNECT_TIMEOUT)
            await cli_process.end_group(transport)
            if not isinstance(exc, Exception):
                raise
            tail = self._stderr.text() if self._stderr else self.session_stderr.text()
            raise cli_process.start_error(exc, died, self.session_id, tail) from exc
        self._client = client
        self._model = model
        self._effort = effort
        self._permission_mode = DEFAULT_PERMISSION_MODE
        self._transport = transport
        self._pid = transport.pid
        self._idle.set()
        self._reader = asyncio.create_task(self._read(client), name=f"claude-reader-{self.thread_id}")

    async def _read(self, client: ClaudeSDKClient) -> None:
        end = _End()
        try:
            async for item in cli_process.messages(client):
                self._route(item)
        except Exception as exc:  # noqa: BLE001 - handed to the turn as its error
            end = _End(exc)
        finally:
            if self._queue is not None:
                self._queue.put_nowait(end)
            self._idle.set()

    def _route(self, item: Any) -> None:
        if is_replay(item):  # the CLI took a user message in (``--replay-user-messages``): never a turn's event
            self._steers.take_in(item)
            return
        session_id = _init_session_id(item)
        if session_id and session_id != self.session_id:
            self._new_session_id = session_id
        if is_result(item) and self._new_session_id:
            # Adopted (and persisted) once a turn has ended: a CLI killed before then may not have written the
            # session's transcript, and resuming it would fail on every later turn ("No conversation found").
            new, self._new_session_id = self._new_session_id, None
            self._on_session_id(new)  # persisted first: if that fails the session is not resumed later either
            self.session_id = new
        if self._queue is not None:
            routed = self._steers.at_result(item) if is_result(item) else item
            self._queue.put_nowait(routed)
            if isinstance(routed, IntermediateResult):  # the CLI starts its next turn with a steered message at
                return  # once, which the running turn goes on through: it is not idle
        else:
            if _starts_a_turn(item):  # the CLI answers a finished background task on its own: the next turn
                self._idle.clear()  # waits for that turn's result, which must not be taken for its own
            if self._between_turns is not None:
                self._between_turns(item)
        if is_result(item):
            self._idle.set()

    async def pause(self, interrupt_id: str) -> None:
        """The CLI waits on a permission request: the running turn's consumer learns it among the messages, after
        those the CLI printed before it (the SDK hands the request over while they may still be in its buffer)."""
        if self._new_session_id:  # its transcript holds the turn so far: a successor pod resumes from there
            new, self._new_session_id = self._new_session_id, None
            self._on_session_id(new)
        loop = asyncio.get_running_loop()
        until = loop.time() + PAUSE_ORDER_BOUND
        while buffered_messages(self._client) and loop.time() < until:  # noqa: ASYNC110 - the SDK's buffer has no event
            await asyncio.sleep(0)
        if self._queue is not None:
            self._queue.put_nowait(Paused(interrupt_id))

    def _on_stderr(self, line: str) -> None:
        self.session_stderr.add(line)
        if self._stderr is not None:
            self._stderr.add(line)

    async def _abandon(self) -> None:
        """The consumer stopped before the result (interrupt escalation, timeout, shutdown)."""
        if self._client is not None and not self._idle.is_set():
            await self.interrupt()

    async def _exit_error(self, end: _End, transport: WatchedTransport, tail: StderrTail) -> BridgeError:
        """Why the CLI's stream ended early, the killing signal named (the SDK may see only an end of output or a
        failed write, whichever came first)."""
        return cli_process.stop_error(end.error, await transport.exit_code(), tail.text() or self.session_stderr.text())

    async def close(self) -> None:
        """Disconnect (stdin closed, then SIGTERM, then SIGKILL inside the SDK) and end the process group: the tool
        processes the CLI left in it killed, the CLI and they reaped."""
        client, reader, transport = self._client, self._reader, self._transport
        self._client, self._reader, self._pid, self._transport = None, None, None, None
        self._tool_groups = set()
        if client is not None:
            try:
                await asyncio.wait_for(client.disconnect(), DISCONNECT_TIMEOUT)
            except Exception as exc:  # noqa: BLE001
                log.warning("claude disconnect failed for thread %s: %s", self.thread_id, exc)
        if transport is not None:
            await cli_process.end_group(transport)
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        self._idle.set()

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def idle(self) -> bool:
        """No turn runs or starts in this CLI (nor waits for its result)."""
        return self._idle.is_set() and not self._lock.locked()


async def _one_user_message(content: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """A user message of content blocks (text, images, documents), as the SDK's streaming input takes it."""
    yield {"type": "user", "parent_tool_use_id": None, "message": {"role": "user", "content": content}}
