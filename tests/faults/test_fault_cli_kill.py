"""The CLI process is SIGKILLed (before its first line, mid-text, mid-tool-call), for each real runner.

The run ends with one RUN_ERROR that says the CLI was killed, every block is closed (check_stream), nothing of
the CLI's process groups is left (the tool it was running included), and the thread takes a next run.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from runners import (
    PLAIN_PROMPT,
    RUNNERS,
    cli_groups,
    cmdline,
    descendants,
    scripted_runner,
    wait_for,
    wait_gone,
)

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]
TOOL_MARK = "time.sleep(37)"  # the tool the scripted model runs (Claude Code refuses a plain long sleep)


def tool_processes(old: set[int] = frozenset()) -> list[int]:
    return [pid for pid, (_, state) in descendants().items()
            if state != "Z" and pid not in old and TOOL_MARK in cmdline(pid)]


def only(pids: set[int]) -> int:
    """The one CLI process of the run (pids are not ordered: they wrap around, so no ``min()``)."""
    assert len(pids) == 1, {pid: cmdline(pid)[:60] for pid in pids}
    return next(iter(pids))


@pytest.mark.parametrize("when", ["before-first-line", "mid-text", "mid-tool-call"])
@pytest.mark.parametrize("runner_type", RUNNERS)
async def test_cli_sigkilled(runner_type: str, when: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner(runner_type, tmp_path, monkeypatch, runner_idle_timeout=60) as r:
        r.server.slow_delay = 0.4
        r.server.shell_command = f"python3 -c 'import time; {TOOL_MARK}'; echo done > late.txt"
        baseline = cli_groups()
        old_groups = {pgid for pgid, _ in descendants().values()}
        old_pids = set(descendants())
        prompt = {"before-first-line": "NOTOOL hello", "mid-text": "SLOW tell a story",
                  "mid-tool-call": "Create out.txt with hello"}[when]
        requests_before = r.model_requests()  # the CLI's own requests at start-up are not the run's
        run = asyncio.create_task(r.harness.run("t-kill", prompt))
        if when == "before-first-line":
            r.server.mode = "hang"  # nothing streams even if the kill comes late
            # A new CLI process, or the live one that got the run's model request (Gemini's ACP process).
            victim = only(await wait_for(lambda: (cli_groups() - baseline) | (
                r.persistent_leaders() if r.model_requests() > requests_before else set()), timeout=60,
                what="the CLI process"))
            assert len(r.logged("t-kill")) == 1  # only RUN_STARTED: the CLI has printed nothing usable yet
        elif when == "mid-text":
            await wait_for(lambda: r.seen("t-kill", "TEXT_MESSAGE_CONTENT"), what="streamed text")
            victim = only(cli_groups() - baseline | r.persistent_leaders())
        else:
            await wait_for(lambda: r.seen("t-kill", "TOOL_CALL_START") and tool_processes(old_pids), what="the tool")
            if runner_type == "gemini-cli":
                # The scenario, not a wait for something: a tool that has run for a moment. Claude's and Codex's
                # tools are found by the CLI's tag however young (process.descendants). Gemini's end with the CLI
                # (they run on its terminal) and leave zombies that only a scan of their group (every 0.25 s) reaps.
                await asyncio.sleep(1.0)
            print({pid: (info, cmdline(pid)[:60]) for pid, info in descendants().items() if pid not in old_pids})
            victim = only(cli_groups() - baseline | r.persistent_leaders())
        groups = {pgid for pgid, _ in descendants().values()} - old_groups - {os.getpgid(0)}
        command = cmdline(victim)
        os.kill(victim, signal.SIGKILL)
        events = await asyncio.wait_for(run, 120)
        r.server.mode = "ok"

        assert events[-1]["type"] == "RUN_ERROR", (command, events[-1])
        assert events[-1]["code"] == "CLI_KILLED", (command, events[-1])  # the same code from every runner
        assert await wait_gone(groups, r) == [], [(p, s, cmdline(p)) for p, s in r.strays(groups)]
        assert tool_processes(old_pids) == []
        assert not (r.settings.workspace_path / "late.txt").exists()

        after = await r.harness.run("t-kill", PLAIN_PROMPT)
        assert after[-1]["type"] == "RUN_FINISHED", after[-1]
    message = events[-1]["message"]
    assert "killed by SIGKILL" in message, message
