"""Turns on a live ACP agent: one ACP session per AG-UI thread, one ``session/prompt`` per turn.

* The thread's session: created on its first turn, persisted in the session map once the model has answered in it
  (an agent may keep no history for a session whose first prompt failed at once); after a restart of the agent or
  of the pod it is loaded again (``session/load``, or ``session/resume`` when the agent has only that or its preset
  prefers it; an agent with neither ends the run with ``RESUME_FAILED``, saying so, never a new session instead).
  How an agent's session files are kept safe around a load, and where a turn goes when its session cannot be loaded
  now (``fallback``), is its preset's (``SessionKeeper``: Gemini's files, or nothing to keep).
* A workflow switch: a thread whose session works in another folder goes on in the new one as its agent can
  (``moves``: closed and loaded there, moved by the agent, or a new session told the conversation so far); each
  session's folder is persisted (``folders``), so that this holds after a restart too.
* Interrupt = ``session/cancel`` (an open permission request answered ``cancelled`` first): the process and the
  session stay. A turn the core closes early is cancelled the same way; if the agent does not end it in time, it
  is restarted.
* Approvals: ``session/request_permission`` becomes an interrupt; the run ends, the turn is parked
  (``interrupts.parked``) and the thread's next run, which brings the answer, streams the rest of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any, Protocol

from ag_ui.core import BaseEvent

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_gemini_cli import GeminiAcpAdapter
from ag_ui_gemini_cli.acp_schema import CancelParams, ContentBlock, PromptResult, RequestId, RequestPermissionParams
from ambient_runner.bridges.acp_client.approvals import REFUSED_RESULT, approval_request, auto_reply, reply
from ambient_runner.bridges.acp_client.connection import AcpClosed, AcpError
from ambient_runner.bridges.acp_client.feed import PromptFeed
from ambient_runner.bridges.acp_client.live import AcpSession, LiveAgent, cannot_reopen
from ambient_runner.bridges.acp_client.moves import FolderMove, ReopenThere, SessionFolders
from ambient_runner.bridges.contract import BridgeError, Turn
from ambient_runner.bridges.session_map import SessionMap
from ambient_runner.bridges.turn_loop import Step, TurnHooks
from ambient_runner.interrupts.book import Answer, PendingInterrupt
from ambient_runner.interrupts.human_in_the_loop import HumanInTheLoop
from ambient_runner.interrupts.parked import LiveTurn
from ambient_runner.workspace.workflows import AgentPlace

log = logging.getLogger(__name__)
CANCEL_WAIT = 5.0  # s for the CLI to end a cancelled prompt before it is restarted
STOPPED = "The run was stopped."

Fallback = Callable[[Turn], AsyncGenerator[BaseEvent, None]]
AcpTurn = LiveTurn[PromptFeed, GeminiAcpAdapter]
SessionMode = Callable[[str, bool], str | None]  # (approval policy, plan) -> the ACP session mode, None: left as is
AdapterFactory = Callable[[Turn, str], GeminiAcpAdapter]  # (turn, model) -> the translator of its prompt


def reporting_usage(turn: Turn, model: str) -> GeminiAcpAdapter:
    """An adapter for an agent that reports usage in ``_meta.quota`` (Gemini; a slash command has none)."""
    return GeminiAcpAdapter(turn.thread_id, turn.run_id, model=model,
                            expects_usage=not turn.prompt.lstrip().startswith("/"))


class Backup(Protocol):
    def restore(self) -> None: ...
    def discard(self) -> None: ...


class SessionKeeper(Protocol):
    """What an agent's preset does around ``session/load``: carry a session's files into a new folder, say whether
    it may be loaded now, and back them up before a load (put back when it fails)."""

    async def carry(self, live: LiveAgent, session_id: str, cwd: Path) -> None: ...
    def loadable_now(self, session_id: str) -> bool: ...
    def backup(self, session_id: str) -> Backup: ...


class _NoBackup:
    def restore(self) -> None:
        pass

    def discard(self) -> None:
        pass


class NothingToKeep:
    """An agent that keeps its sessions safe itself: every session is loadable, nothing is copied."""

    async def carry(self, live: LiveAgent, session_id: str, cwd: Path) -> None:
        pass

    def loadable_now(self, session_id: str) -> bool:
        return True

    def backup(self, session_id: str) -> Backup:
        return _NoBackup()


def no_mode(policy: str, plan: bool) -> None:
    return None


def prompt_blocks(turn: Turn) -> list[ContentBlock]:
    """The prompt's ACP content: the text, then the images as ``image`` blocks, or, when a document is among the
    attachments, every attachment as a ``resource_link`` (with both kinds the CLI drops the images)."""
    blocks = [ContentBlock(type="text", text=turn.prompt)]
    if any(not a.mime_type.startswith("image/") for a in turn.attachments):
        return blocks + [ContentBlock(type="resource_link", uri=a.path.as_uri(), name=a.path.name,
                                      mime_type=a.mime_type) for a in turn.attachments]
    return blocks + [ContentBlock(type="image", mime_type=a.mime_type, data=a.base64) for a in turn.attachments]


class AcpTurns(TurnHooks[PromptFeed, GeminiAcpAdapter]):
    """The turn hooks of a live ACP agent (``fallback``: where a turn goes whose session cannot be loaded now;
    without one such a turn fails with ``SESSION_ERROR``)."""

    def __init__(self, live: LiveAgent, sessions: SessionMap, hitl: HumanInTheLoop,
                 place: Callable[[Turn], AgentPlace], default_model: Callable[[str | None], str],
                 rename: Callable[[BaseEvent], BaseEvent], *, files: SessionKeeper | None = None,
                 fallback: Fallback | None = None, mode: SessionMode = no_mode, who: str = "The agent",
                 adapter: AdapterFactory = reporting_usage, model_id: Callable[[str], str] = str,
                 drops_cancelled: bool = False, keeps_own_model: bool = False, ends_commands: bool = True,
                 max_open: int | None = None, moves: FolderMove | None = None,
                 folders: SessionFolders | None = None) -> None:
        self.live = live
        # the sessions kept open in the agent (None: all): beyond it, before another opens, the least recently used
        # idle ones are closed, when the agent can close and reopen them (Claude Code over ACP runs a process each)
        self.max_open = max_open
        self._used: dict[str, None] = {}  # the threads, least recently used first
        # the agent ends its running commands on session/cancel; else (codex-acp) the commands a cancelled prompt
        # started are ended by the runner: SIGTERM to the process groups that appeared during the prompt
        self.ends_commands = ends_commands
        # the agent starts on its own model (a custom agent's ids are its own): switched only when a run names one
        self.keeps_own_model = keeps_own_model
        self.drops_cancelled = drops_cancelled  # the agent forgets a cancelled prompt (Gemini): it is sent again
        self.adapter = adapter
        self.model_id = model_id  # the runner's model name -> the agent's model id
        self.sessions = sessions
        self.files: SessionKeeper = files or NothingToKeep()
        self.mode = mode
        self.who = who  # the agent in a question card ("Gemini wants to run a command")
        self.hitl = hitl
        self.place = place  # where a turn's session works (the active workflow's folder, else the workspace)
        self._cwds: dict[str, Path] = {}  # session -> the folder it works in
        self._model = default_model
        self.fallback = fallback
        self.rename = rename  # the MCP tools' names as the runner's configuration spells them
        self._threads: dict[str, str] = {}  # thread -> its session in this runner (persisted once it answered)
        self._feeds: dict[str, PromptFeed] = {}  # thread -> its running prompt
        # thread -> the text of a prompt that was cancelled: the CLI drops it from the history, so it goes with the
        # next prompt (as the stream-json CLI does after an interrupt: the old and the new prompt in one message)
        self._cancelled: dict[str, list[ContentBlock]] = {}
        self.moves = moves or ReopenThere()  # how a thread's session goes on in a workflow's new folder
        self._history: dict[str, list[ContentBlock]] = {}  # thread -> its conversation so far, for a new session
        self.folders = folders  # each session's folder, persisted (None: this process's alone)

    # ----- a turn (the loop around it: bridges.turn_loop) ------------------------------------------------------
    async def start_turn(self, turn: Turn) -> AcpTurn | AsyncGenerator[BaseEvent, None] | None:
        """The turn's prompt sent in the thread's session; the turn through ``fallback`` when the session cannot
        be loaded now."""
        if turn.interrupted.is_set():
            return None
        mark = self.live.stderr_tail.count
        try:
            session = await self._session(turn)
        except AcpClosed as exc:
            raise self._error(exc, turn) from exc
        except AcpError as exc:  # session/new refused: the CLI's reason is the error's message, data and stderr
            self._take_stderr(turn, mark)
            raise BridgeError(f"{self.live.agent.name} could not open the thread's session: {exc}",
                              code=ErrorCode.SESSION_ERROR, stderr_tail=turn.stderr_tail.text()) from exc
        if session is None:  # the session cannot be loaded now: this turn through the fallback
            if self.fallback is None:
                raise BridgeError(f"{self.live.agent.name} could not load the thread's session "
                                  f"{self.sessions.get(turn.thread_id)}.", code=ErrorCode.SESSION_ERROR)
            return self.fallback(turn)
        model = self._model(turn.options.model)
        try:
            mode = self.mode(self.hitl.turns.policy(turn.thread_id), turn.options.mode == "plan")
            if mode is not None:
                await self.live.set_mode(session, mode)
            if turn.options.model is not None or not self.keeps_own_model:
                await self.live.set_model(session, self.model_id(model))
            connection = await self.live.connection()
        except AcpClosed as exc:
            raise self._error(exc, turn) from exc
        except AcpError as exc:
            raise BridgeError(f"{self.live.agent.name} refused the session's settings: {exc}",
                              code=ErrorCode.SESSION_ERROR) from exc
        if turn.interrupted.is_set():
            return None
        feed = PromptFeed(self.live, session.id, stderr_mark=self.live.stderr_tail.count)
        blocks = prompt_blocks(turn)
        feed.texts = [b for b in blocks if b.type == "text"]
        if not self.ends_commands:
            feed.groups_before = self.live.tool_groups()
        feed.start(connection, [*self._history.pop(turn.thread_id, []), *self._cancelled.pop(turn.thread_id, []),
                                *blocks])
        self._feeds[turn.thread_id] = feed
        return LiveTurn(feed, self.adapter(turn, model))

    async def _session(self, turn: Turn) -> AcpSession | None:
        """The thread's session in the live CLI (created, or loaded); None when it must not be loaded now."""
        thread = turn.thread_id
        cwd = self.place(turn).cwd
        await self.live.connection()  # a CLI that died is started again first (and its sessions forgotten)
        self._used.pop(thread, None)
        self._used[thread] = None
        persisted = self.sessions.get(thread)
        session_id = self._threads.get(thread) or persisted
        if session_id is not None and session_id in self.live.sessions and self._cwds.get(session_id) in (cwd, None):
            return self.live.sessions[session_id]
        old = self._folder(session_id) if session_id is not None and persisted == session_id else None
        if session_id is not None and old is not None and old != cwd:  # a workflow switch: on in the new folder
            moved = await self.moves.move(self.live, session_id, old, cwd)
            if moved is not None:
                self._threads[thread] = moved.session.id
                self._works_in(moved.session.id, cwd, persist=moved.settled)
                self._history[thread] = moved.history
                return moved.session
        await self._make_room(thread)
        if session_id is None or persisted != session_id:  # new, or one that never answered (nothing to keep)
            session = await self.live.new_session(cwd)
            self._threads[thread] = session.id
            self._works_in(session.id, cwd)
            return session
        if not self.live.reopens:  # an agent that can neither load nor resume: never a new session in its place
            raise BridgeError(cannot_reopen(self.live.agent.name), code=ErrorCode.RESUME_FAILED)
        if self._cwds.get(session_id) != cwd:  # loaded (or resumed by the fallback) in a folder new to it
            await self.files.carry(self.live, session_id, cwd)
        if not self.files.loadable_now(session_id):
            log.info("thread %s: session %s cannot be loaded now (created this minute, or no file): this turn runs "
                     "through the fallback", thread, session_id)
            return None
        backup = self.files.backup(session_id)
        try:
            session = await self.live.load_session(session_id, cwd)  # in a new folder too (a workflow switch)
        except (AcpError, TimeoutError) as exc:
            backup.restore()
            log.warning("thread %s: session/load of %s failed (%s); its files were put back and this turn runs "
                        "through the fallback", thread, session_id, exc)
            return None
        except AcpClosed:
            backup.restore()
            raise
        backup.discard()
        self._threads[thread] = session.id
        self._works_in(session.id, cwd)
        return session

    def _folder(self, session_id: str) -> Path | None:
        """The folder a session works in: as this process opened it, else as persisted (before a restart)."""
        return self._cwds.get(session_id) or (self.folders.get(session_id) if self.folders is not None else None)

    def _works_in(self, session_id: str, cwd: Path, persist: bool = True) -> None:
        self._cwds[session_id] = cwd
        if self.folders is not None and persist:
            self.folders.set(session_id, cwd)

    async def _make_room(self, thread: str) -> None:
        """Before ``thread``'s session opens: while ``max_open`` sessions are open, the least recently used idle one
        (no prompt running, no turn waiting for a person, persisted so it can be reopened) is closed."""
        if self.max_open is None or not (self.live.closes and self.live.reopens):
            return
        for other in list(self._used):
            if len(self.live.sessions) < self.max_open:
                return
            session_id = self._threads.get(other)
            if (other == thread or session_id is None or session_id not in self.live.sessions
                    or self.sessions.get(other) != session_id or other in self._feeds or self.hitl.paused(other)):
                continue
            if await self.live.close_session(session_id):
                log.info("thread %s: its idle session %s closed (%d open at most); the next turn reopens it", other,
                         session_id, self.max_open)

    # ----- the items of one prompt -----------------------------------------------------------------------------
    def translate(self, turn: Turn, live: AcpTurn, item: Any) -> Step:
        """One item of the prompt's feed: an update, a permission request (the run ends when it is put to a
        person), a refused call, the prompt's end or its error."""
        feed, adapter = live.stream, live.adapter
        kind, paused = item[0], False
        if kind == "update":
            events = adapter.feed(item[1])
        elif kind == "permission":
            events = adapter.permission(item[2].tool_call)
            paused = self._permission(turn.thread_id, feed, item[1], item[2],
                                      adapter.tool_call_name(item[2].tool_call.tool_call_id))
        elif kind == "refused":
            events = adapter.refused(item[1], item[2])
        elif kind == "end":
            events = adapter.end(self._refusal_ended(turn, feed, item[1]))
            if item[1].stop_reason == "cancelled" and self.drops_cancelled:
                self._cancelled[turn.thread_id] = feed.texts
        elif isinstance(item[1], AcpClosed):
            raise self._error(item[1], turn, feed.stderr_mark)
        else:
            events = adapter.fail(item[1].error)
        if events and kind != "error":  # the model answered: the CLI keeps this turn in the session
            self.sessions.set(turn.thread_id, feed.session_id)
        return Step([self.rename(e) for e in events], paused=paused, done=kind in ("end", "error"))

    @staticmethod
    def _refusal_ended(turn: Turn, feed: PromptFeed, result: PromptResult) -> PromptResult:
        """An agent that ends its turn ``cancelled`` when a person refused a call (codex-acp): that turn ended as
        refused, not stopped, unless the run was interrupted too."""
        if result.stop_reason == "cancelled" and feed.refused and not turn.interrupted.is_set():
            return result.model_copy(update={"stop_reason": "end_turn"})
        return result

    def stderr(self, turn: Turn, live: AcpTurn) -> str:
        self._take_stderr(turn, live.stream.stderr_mark)
        return turn.stderr_tail.text()

    def on_park(self, turn: Turn, live: AcpTurn) -> None:
        self._feeds.pop(turn.thread_id, None)

    async def close_turn(self, turn: Turn, live: AcpTurn) -> None:
        await self._end_prompt(turn.thread_id, live.stream)

    def _permission(self, thread_id: str, feed: PromptFeed, request_id: RequestId | None,
                    params: RequestPermissionParams, name: str) -> bool:
        """A permission request: allowed at once unless the thread asks; else an interrupt (True: the run ends)."""
        if self.hitl.turns.policy(thread_id) != "ask":
            asyncio.ensure_future(self.live.respond(request_id, auto_reply(params)))
            return False
        pending = self.hitl.ask(thread_id, approval_request(params, self.who, name))
        task = asyncio.create_task(self._answer(thread_id, feed, pending, request_id, params))
        feed.answers.add(task)
        task.add_done_callback(feed.answers.discard)
        return True

    async def _answer(self, thread_id: str, feed: PromptFeed, pending: PendingInterrupt,
                      request_id: RequestId | None, params: RequestPermissionParams) -> None:
        answer = await self.hitl.answer(pending)  # a stop when the runner is stopping or the turn was closed
        if not answer.approved:  # the CLI says nothing more about a refused call: it is closed in the stream
            feed.put(("refused", pending.request.tool_call_id, answer.message or REFUSED_RESULT))
            feed.refused = feed.refused or not answer.stop_turn
        await self.live.respond(request_id, reply(answer, params))
        if answer.stop_turn:
            await self._cancel(feed)
        self.hitl.turns.note_refusal(thread_id, answer)

    # ----- stopping ---------------------------------------------------------------------------------------------
    async def interrupt(self, thread_id: str) -> None:
        feed = self._feeds.get(thread_id)
        self.hitl.book.refuse_all(thread_id, STOPPED, stop_turn=True)  # their replies cancel the prompt too
        if feed is not None and feed.running:
            await self._cancel(feed)

    async def _cancel(self, feed: PromptFeed) -> None:
        if self.live.alive:
            try:
                await (await self.live.connection()).notify("session/cancel", CancelParams(session_id=feed.session_id))
            except AcpClosed:
                pass
        if not self.ends_commands:
            self.live.end_tool_groups(self.live.tool_groups() - feed.groups_before)
        elif self.live.tools is not None:
            # A command started a moment ago: note its group while the CLI is still ending it (it takes 50 ms or
            # more). Not before the cancel: held back even 2 ms, a cancel of a prompt paused on a permission request
            # can make the CLI lose the session's file (tests/approvals/test_paused_runs.py, pod replaced).
            self.live.tools.scan()

    async def _end_prompt(self, thread_id: str, feed: PromptFeed) -> None:
        """The prompt's stream is done with. One still running (the core closed the run: timeout, escalation) is
        cancelled; a CLI that does not end it in time is restarted, so the session is never left mid-prompt."""
        if self._feeds.get(thread_id) is feed:
            del self._feeds[thread_id]
        if feed.running:
            for waiting in self.hitl.book.pending(thread_id):
                self.hitl.book.resolve(thread_id, {waiting.id: Answer(approved=False, message=STOPPED, stop_turn=True)})
            for request in list(feed.answers):
                await asyncio.wait({request}, timeout=1.0)
            await self._cancel(feed)
            if not await feed.ended(CANCEL_WAIT):
                log.warning("%s did not end a cancelled prompt within %.0f s: restarting it", self.live.agent.label,
                            CANCEL_WAIT)
                await self.live.close()
        await feed.aclose()
        self.live.reap_tools()

    def _take_stderr(self, turn: Turn, mark: int | None) -> None:
        """The live CLI's stderr lines of this turn (since ``mark``; the last ones when unknown) into the turn's."""
        lines = self.live.stderr_tail.since(mark) if mark is not None else self.live.stderr_tail.text(20).splitlines()
        for line in lines:
            turn.stderr_tail.add(line)

    def _error(self, closed: AcpClosed, turn: Turn, mark: int | None = None) -> BridgeError:
        if closed.stderr:  # it ended while starting: what it printed then
            for line in closed.stderr.splitlines():
                turn.stderr_tail.add(line)
        else:
            self._take_stderr(turn, mark)
        return BridgeError(f"{closed.message} The next run starts it again and continues the thread.",
                           code=closed.code, stderr_tail=turn.stderr_tail.text())
