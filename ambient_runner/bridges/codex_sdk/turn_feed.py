"""A Codex turn's notifications on the event loop, each handed over as it comes.

The SDK's ``AsyncTurnHandle.stream()`` hops to a worker thread for each notification (``asyncio.to_thread`` of its
subscription's blocking ``next``), one hop after another: the notifications of a burst (four come together at a
turn's end) wait a thread-pool round trip each before the run sees them. Here one thread per turn blocks on the
turn's subscription and hands each notification to the loop the moment it is routed (``call_soon_threadsafe``).
The thread ends after the turn's ``turn/completed``, or when the stream is closed: closing the subscription wakes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator
from typing import Any

from ambient_runner.bridges.codex_sdk.sdk_private import turn_subscription


def is_turn_end(notification: Any, turn_id: str) -> bool:
    """``turn/completed`` of the turn ``turn_id``: nothing of that turn follows it."""
    if notification.method != "turn/completed":
        return False
    turn = getattr(notification.payload, "turn", None)
    return getattr(turn, "id", None) == turn_id


async def turn_notifications(handle: Any) -> AsyncGenerator[Any, None]:
    """The notifications of ``handle``'s turn (an ``AsyncTurnHandle``) up to its ``turn/completed``; what the SDK's
    reader raises (the app-server is gone) is raised here."""
    loop = asyncio.get_running_loop()
    arrived: asyncio.Queue[Any] = asyncio.Queue()
    subscription = turn_subscription(handle)

    def hand_over(item: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody reads this turn any more
            loop.call_soon_threadsafe(arrived.put_nowait, item)

    def read() -> None:
        try:
            while True:
                notification = subscription.next()
                hand_over(notification)
                if is_turn_end(notification, handle.id):
                    return
        except BaseException as exc:  # noqa: BLE001 - the transport closed, or the stream was closed
            hand_over(exc)

    threading.Thread(target=read, name=f"codex-turn-{handle.id}", daemon=True).start()
    try:
        while True:
            item = await arrived.get()
            if isinstance(item, BaseException):
                raise item
            yield item
            if is_turn_end(item, handle.id):
                return
    finally:
        subscription.close()  # ends the reading thread, and lets the SDK forget the turn's events
