"""The Claude Code process behind a session, through the SDK: started unless it ends first, read as raw messages,
ended with its process group, and why it ended put in words (the signal that killed it, its exit code) with the
RUN_ERROR code that follows from how it ended, never from words in a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

from claude_agent_sdk import ClaudeSDKClient

from ag_ui_claude.sdk_private import raw_messages
from ag_ui_cli_common import ErrorCode, code_for_exit, how_it_ended
from ambient_runner.bridges.claude.transport import WatchedTransport
from ambient_runner.bridges.contract import BridgeError
from ambient_runner.process.group import ProcessGroup

EXIT_GRACE = 1.0  # how long the SDK may take to report a CLI that ended while starting
EXIT_CODE_IN_TEXT = re.compile(r"exit code:? (-?\d+)")


class Exited(Exception):
    def __init__(self, exit_code: int, what: str = "") -> None:
        super().__init__(f"{what} (exit code {exit_code})" if what else f"exit code {exit_code}")
        self.exit_code = exit_code


async def connect_unless_ended(client: ClaudeSDKClient, transport: WatchedTransport) -> None:
    """``client.connect()``, failed with the exit code as soon as the CLI ends before it is ready (the SDK would
    wait out its initialize timeout for a CLI that exited cleanly)."""
    connecting = asyncio.ensure_future(client.connect())
    ended = asyncio.ensure_future(transport.ended())
    try:
        await asyncio.wait({connecting, ended}, return_when=asyncio.FIRST_COMPLETED)
        if not connecting.done():  # a moment for the SDK to say why itself (its error names more)
            await asyncio.wait({connecting}, timeout=EXIT_GRACE)
        if not connecting.done():
            raise Exited(ended.result(), "it ended before it was ready")
        connecting.result()
    finally:
        for task in (connecting, ended):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def end_group(transport: WatchedTransport) -> None:
    """SIGKILL to the CLI's process group (the launcher's ``setsid`` makes the CLI lead it: its id is the CLI's
    pid), the CLI waited for, the tool processes it left there reaped."""
    if transport.pid is not None:
        await ProcessGroup(transport.pid, transport.process).kill_and_reap()


async def messages(client: ClaudeSDKClient) -> AsyncIterator[Any]:
    """The CLI's messages as raw dicts (the SDK's public iterator drops message kinds it does not know)."""
    raw = raw_messages(client)
    if raw is not None:
        async for item in raw:
            yield item
        return
    async for message in client.receive_messages():  # fallback: typed messages, also accepted by the adapter
        yield message


def start_error(exc: Exception, died: int | None, session_id: str | None, tail: str) -> BridgeError:
    """Why Claude Code could not start (``died``: its exit status, when the runner saw it end)."""
    resumed = f" while resuming session {session_id}" if session_id else ""
    why = with_death(exc, died, exit_code_too=True)  # e.g. a write to its stdin failed
    killed = by_signal(exc, died)  # killed: the same code as mid-turn
    return BridgeError(f"Claude Code could not start{resumed}: {why}",
                       code=ErrorCode.CLI_KILLED if killed else ErrorCode.CLI_START_FAILED, stderr_tail=tail)


def stop_error(error: BaseException | None, died: int | None, tail: str) -> BridgeError:
    """Why the CLI's stream ended before the turn's result, the killing signal named (the SDK may see only an end of
    output or a failed write, whichever came first)."""
    why = with_death(error, died)
    return BridgeError(f"Claude Code stopped before finishing the turn{': ' + why if why else ''}",
                       code=code_for_exit(exit_code(error, died)), stderr_tail=tail)


def reported_exit_code(exc: BaseException | None) -> int | None:
    """The CLI's exit code as the SDK's error reports it (an attribute, or only in its message)."""
    code = getattr(exc, "exit_code", None)
    if code is None and exc is not None and (said := EXIT_CODE_IN_TEXT.search(str(exc))):
        code = int(said.group(1))
    return code if isinstance(code, int) else None


def exit_code(exc: BaseException | None, died: int | None) -> int | None:
    """How the CLI ended: its process's own exit status when the runner saw it end (``died``), else what the SDK's
    error reports (negative: the signal that killed it)."""
    return died if died is not None else reported_exit_code(exc)


def by_signal(exc: BaseException | None, died: int | None) -> bool:
    code = exit_code(exc, died)
    return code is not None and code < 0


def with_death(exc: BaseException | None, died: int | None, *, exit_code_too: bool = False) -> str:
    """The SDK's error in words, with how the CLI ended when they do not say it: the signal that killed it, and
    with ``exit_code_too`` also a plain exit code."""
    why = describe_failure(exc) if exc is not None else ""
    if died is None:
        return why
    said = reported_exit_code(exc)
    if died < 0 and not (said is not None and said < 0):  # describe_failure names a signal the SDK reported
        return "; ".join(p for p in (describe_failure(Exited(died)), why) if p)
    if died >= 0 and exit_code_too and not EXIT_CODE_IN_TEXT.search(why):
        return f"{why.rstrip(': ')} (exit code {died})"
    return why


def describe_failure(exc: BaseException) -> str:
    """The SDK's error, with a negative exit code named as the signal that killed the CLI (the SDK says it as an
    attribute, or only in its message)."""
    code = reported_exit_code(exc)
    if code is not None and code < 0:
        return f"the Claude Code process was {how_it_ended(code)} ({exc})"
    return str(exc)
