"""The client drops its connection mid-run and reconnects with Last-Event-ID, several times, also after the run
ended, for each real runner: it gets every event exactly once, in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import check_stream, parse_sse
from runners import PLAIN_PROMPT, RUNNERS, scripted_runner

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]
TERMINAL = {"RUN_FINISHED", "RUN_ERROR"}
PER_CONNECTION = 4  # events read before the client drops the connection


async def read_some(client: Any, method: str, url: str, limit: int, **kwargs: Any) -> list[tuple[int, dict]]:
    """Read up to ``limit`` events, then drop the connection (closing the response mid-stream)."""
    got: list[tuple[int, dict]] = []
    async with client.stream(method, url, **kwargs) as response:
        assert response.status_code == 200, await response.aread()
        async for seq, event in parse_sse(response.aiter_lines()):
            got.append((seq, event))
            if len(got) >= limit:
                break
    return got


@pytest.mark.parametrize("runner_type", RUNNERS)
async def test_reconnects_get_every_event_once_in_order(runner_type: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner(runner_type, tmp_path, monkeypatch) as r:
        r.server.slow_delay = 0.2
        client = r.harness.client
        got = await read_some(client, "POST", "/run", 3, json=r.harness.run_body("t-rc", "SLOW stream it"))
        reconnects = 0
        while got[-1][1]["type"] not in TERMINAL:
            got += await read_some(client, "GET", "/events/t-rc", PER_CONNECTION,
                                   headers={"Last-Event-ID": str(got[-1][0])})
            reconnects += 1
        last = got[-1][0]
        after_end = await read_some(client, "GET", "/events/t-rc", 10_000, headers={"Last-Event-ID": str(last)})
        middle = await read_some(client, "GET", "/events/t-rc", 10_000, headers={"Last-Event-ID": str(last // 2)})
        by_query = await read_some(client, "GET", f"/events/t-rc?after={last - 2}", 10_000)
        full = await r.harness.events("t-rc", after=0)

        r.server.slow_delay = 0.0
        second = await r.harness.run_with_ids("t-rc", PLAIN_PROMPT)
        second_replay = await read_some(client, "GET", "/events/t-rc", 10_000, headers={"Last-Event-ID": str(last)})

    assert reconnects >= 3, reconnects
    assert [seq for seq, _ in got] == list(range(1, last + 1))
    assert got == full
    check_stream([event for _, event in got])
    assert got[-1][1]["type"] == "RUN_FINISHED"
    assert after_end == []  # nothing after the terminal event: the stream closes at once
    assert middle == got[last // 2:]
    assert by_query == got[-2:]
    assert second_replay == second and second[0][0] == last + 1
