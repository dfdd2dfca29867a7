"""``SupervisedProcess`` on real processes: what ``stop()`` leaves behind (no task, no process) and keeps (the last
stderr line, also without a newline), and the start error of a CLI that cannot be run."""

from __future__ import annotations

import ast
import asyncio
import sys
import textwrap
from pathlib import Path

import pytest
from proctable import group_members

from ambient_runner.bridges.contract import BridgeError
from ambient_runner.bridges.gemini_cli.session import TurnRunner, TurnSpec
from ambient_runner.bridges.session_map import SessionMap
from ambient_runner.process.errors import ProcessStartError
from ambient_runner.process.group import ProcessGroup
from ambient_runner.process.stderr_tail import StderrTail
from ambient_runner.process.supervisor import ProcessLimits, SupervisedProcess, become_subreaper
from tests.support.runner_kits import make_turn

PROCESS_PACKAGE = Path(__file__).resolve().parents[2] / "ambient_runner" / "process"
LAST_WORDS = "fatal: the last line, without a newline"
# A CLI that never reads its stdin, whose last stderr line has no newline, and whose helper in a session of its own
# keeps stdin and stderr open after the CLI's group is gone (so neither pipe ends with it).
CLI = textwrap.dedent(f"""
    import subprocess, sys, time
    helper = subprocess.Popen(["sleep", "600"], start_new_session=True)
    sys.stderr.write("first line\\n{LAST_WORDS}")
    sys.stderr.flush()
    print(helper.pid, flush=True)
    time.sleep(600)
""")


@pytest.fixture(autouse=True)
def subreaper() -> None:
    become_subreaper()  # as the runner is: the helper is re-parented to this process when the CLI dies


def _pending(proc: SupervisedProcess) -> list[str]:
    """The supervisor's tasks for ``proc`` that are still pending."""
    names = {f"stdin-{proc.pid}", f"stderr-{proc.pid}"}
    return sorted(t.get_name() for t in asyncio.all_tasks() if t.get_name() in names and not t.done())


@pytest.mark.parametrize("cancelled", [False, True], ids=["stopped", "stop-cancelled"])
async def test_stop_cancels_the_stdin_feed_and_keeps_the_last_stderr_line(tmp_path: Path, cancelled: bool) -> None:
    tail = StderrTail()
    proc = await SupervisedProcess.start([sys.executable, "-c", CLI], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                                         stdin_data=b"x" * (8 * 1024 * 1024), stderr_tail=tail,
                                         limits=ProcessLimits(kill_grace=0.2, stderr_settle=0.2))
    helper = 0
    try:
        helper = int((await anext(proc.lines())).text)
        assert _pending(proc) == [f"stderr-{proc.pid}", f"stdin-{proc.pid}"]  # the feed waits on a full pipe
        if cancelled:
            stopping = asyncio.create_task(proc.stop())
            await asyncio.sleep(0)  # the stop has begun
            stopping.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stopping
        else:
            await proc.stop()
        assert proc.returncode is not None and group_members(proc.pgid) == []
        assert _pending(proc) == []  # neither the feed nor the stderr reader is left (no "Task was destroyed")
        assert tail.text().splitlines() == ["first line", LAST_WORDS]
    finally:
        await proc.stop()
        if helper:
            await ProcessGroup(helper, reap_timeout=5).kill_and_reap()
    assert group_members(helper) == []


async def test_the_last_stderr_line_without_newline_is_kept_when_the_cli_exits(tmp_path: Path) -> None:
    tail = StderrTail()
    code = "import sys; sys.stderr.write('one\\nthe end'); sys.stderr.flush(); sys.exit(3)"
    async with await SupervisedProcess.start([sys.executable, "-c", code], cwd=tmp_path, env={},
                                             stderr_tail=tail) as proc:
        assert await proc.wait() == 3
    assert tail.text() == "one\nthe end"


async def test_a_cli_that_cannot_be_run_is_a_start_error_of_the_process_layer(tmp_path: Path) -> None:
    with pytest.raises(ProcessStartError) as missing:
        await SupervisedProcess.start([str(tmp_path / "nope")], cwd=tmp_path, env={})
    assert missing.value.code == "CLI_NOT_FOUND"
    assert missing.value.message == (f"The agent CLI '{tmp_path / 'nope'}' was not found. Install it (make install) "
                                     "or set its path.")
    (tmp_path / "plain").write_text("not a program")
    with pytest.raises(ProcessStartError) as not_executable:
        await SupervisedProcess.start([str(tmp_path / "plain")], cwd=tmp_path, env={})
    assert not_executable.value.code == "CLI_NOT_FOUND"
    assert not_executable.value.message.startswith(f"The agent CLI '{tmp_path / 'plain'}' is not executable: ")


async def test_the_bridge_turns_the_start_error_into_the_same_run_error(tmp_path: Path) -> None:
    runner = TurnRunner(SessionMap(tmp_path))
    spec = TurnSpec(argv=[str(tmp_path / "gemini")], cwd=tmp_path, env={}, resume_session=None)
    with pytest.raises(BridgeError) as raised:
        await runner.start(make_turn("t-1", "hello"), spec)
    assert raised.value.code == "CLI_NOT_FOUND"
    assert raised.value.message == (f"The agent CLI '{tmp_path / 'gemini'}' was not found. Install it "
                                    "(make install) or set its path.")


def test_the_process_layer_imports_nothing_from_the_bridge_layer() -> None:
    for module in sorted(PROCESS_PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                assert not name.startswith(("ambient_runner.bridge", "ambient_runner.runs")), (module.name, name)
