"""``turn_notifications``: a Codex turn's notifications on the event loop, from the SDK's own router and turn
subscription (a recorded turn routed from another thread, as the SDK's reader thread routes them): all of them, in
order, none of another turn, ending with the turn's ``turn/completed``; its reading thread ends with the stream,
also when the stream is closed early; a transport that fails is raised."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from openai_codex import CodexConfig
from openai_codex._message_router import MessageRouter
from openai_codex.api import AsyncTurnHandle
from openai_codex.client import CodexClient
from openai_codex.errors import TransportClosedError

from ambient_runner.bridges.codex_sdk.turn_feed import turn_notifications

RECORDED = [json.loads(line) for line in
            (Path(__file__).parents[1] / "fixtures" / "codex" / "text_deltas.jsonl").read_text().splitlines()]
TURN = RECORDED[0]["params"]["turn"]["id"]
THREAD = RECORDED[0]["params"]["threadId"]


def other_turn(message: dict[str, Any]) -> dict[str, Any]:
    """The same notification, of another turn of another thread."""
    text = json.dumps(message).replace(TURN, "another-turn").replace(THREAD, "another-thread")
    return json.loads(text)


def subscribed() -> tuple[MessageRouter, AsyncTurnHandle]:
    router = MessageRouter()
    with router.pending_turn(THREAD) as cursors:  # as the SDK's turn/start does
        subscription = router.prepare_turn(TURN, THREAD, cursors, for_handle=True)
    return router, AsyncTurnHandle(None, THREAD, TURN, _subscription=subscription)  # type: ignore[arg-type]


def route(router: MessageRouter, messages: list[dict[str, Any]]) -> None:
    client = CodexClient(CodexConfig())  # its coercion to typed notifications; nothing is spawned
    for message in messages:
        router.route_notification(client._coerce_notification(message["method"], message["params"]))


def reading_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"codex-turn-{TURN}"]


async def wait_until(check: Any) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.01)


async def test_every_notification_of_the_turn_in_order_up_to_its_end() -> None:
    router, handle = subscribed()
    mixed = [m for message in RECORDED for m in (message, other_turn(message))]
    route(router, mixed[:5])  # some before the stream is read, the rest from another thread while it is
    later = threading.Thread(target=route, args=(router, mixed[5:] + RECORDED[-1:]))  # and one after the end
    later.start()
    got = [(notification.method, getattr(notification.payload, "turn_id", TURN))
           async for notification in turn_notifications(handle)]
    later.join()
    assert [method for method, _ in got] == [message["method"] for message in RECORDED]
    assert {turn for _, turn in got} == {TURN}
    await wait_until(lambda: not reading_threads())


async def test_a_stream_closed_early_ends_its_reading_thread() -> None:
    router, handle = subscribed()
    route(router, RECORDED[:1])
    stream = turn_notifications(handle)
    assert (await anext(stream)).method == "turn/started"
    waiting = asyncio.ensure_future(anext(stream))  # the thread blocks for the next notification
    await asyncio.sleep(0)
    assert reading_threads()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await stream.aclose()
    await wait_until(lambda: not reading_threads())


async def test_a_transport_that_fails_is_raised() -> None:
    router, handle = subscribed()
    route(router, RECORDED[:2])
    stream = turn_notifications(handle)
    assert [(await anext(stream)).method for _ in range(2)] == ["turn/started", "item/started"]
    router.fail_all(TransportClosedError("Codex process closed stdout"))
    with pytest.raises(TransportClosedError, match="closed stdout"):
        await anext(stream)
    await wait_until(lambda: not reading_threads())
