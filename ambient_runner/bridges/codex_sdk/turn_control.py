"""Stopping a Codex turn: the SDK's interrupt (retried while Codex is still activating the turn), and the command
process groups the turn started, which Codex's interrupt leaves running."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from typing import Any

from ambient_runner.process.descendants import descendant_groups, reap_in_background
from ambient_runner.process.group import ProcessGroup

log = logging.getLogger(__name__)
INTERRUPT_TIMEOUT = 10.0
COMMAND_TERM_GRACE = 1.0  # s an interrupted turn's command gets between SIGTERM and SIGKILL
COMMAND_REAP_TIMEOUT = 2.0  # s for its killed processes to go before the rest is left to the background reaper
TURN_ACTIVATION_WAIT = 3.0  # s an interrupt of a just-started turn is retried until Codex has made it active


async def interrupt_turn(thread_id: str, handle: Any, still_ours: Callable[[], bool]) -> None:
    """The SDK's turn interrupt. Codex refuses it ("no active turn") for a moment after it accepted the turn:
    retried, while ``still_ours()``, for up to ``TURN_ACTIVATION_WAIT`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TURN_ACTIVATION_WAIT
    while True:
        try:
            await asyncio.wait_for(handle.interrupt(), INTERRUPT_TIMEOUT)
            return
        except Exception as exc:  # the turn already ended, or the app-server is gone
            starting = "no active turn" in str(exc) and still_ours()
            if not starting or loop.time() > deadline:
                log.info("codex interrupt of %s: %s", thread_id, exc)
                return
        await asyncio.sleep(0.05)


async def end_commands_since(thread_id: str, pgid: int, before: set[int]) -> None:
    """End every process group under the app-server ``pgid`` that was not there ``before`` the turn (the caller
    knows the turn is the app-server's only one, so they are its commands): SIGTERM, at most
    ``COMMAND_TERM_GRACE`` s for them to end, then SIGKILL, then what was re-parented to us reaped."""
    started = await asyncio.to_thread(descendant_groups, pgid) - before
    if started:
        groups = [ProcessGroup(group, reap_timeout=COMMAND_REAP_TIMEOUT) for group in started]
        await asyncio.gather(*(group.stop(signal.SIGTERM, COMMAND_TERM_GRACE) for group in groups))
        reap_in_background(started)  # the commands' children re-parented to us later (subreaper): no zombies
        log.info("codex interrupt of %s: ended %d command process group(s)", thread_id, len(started))
