"""``descendant_groups`` reads the kernel's child lists (only the CLI's descendants) and finds the same process
groups as a scan of the whole process table: a tool that moved into a group (or a session) of its own is found,
also below another tool, and the CLI's own group is not counted. A tool its CLI started just before it was killed
is found by the CLI's tag."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from ambient_runner.process import descendants as tree
from ambient_runner.process.proc_stat import descendants, processes
from ambient_runner.process.supervisor import SupervisedProcess, become_subreaper


def by_whole_table(pid: int) -> set[int]:
    live = [stat for stat in processes() if not stat.zombie]
    own = next((stat.pgid for stat in live if stat.pid == pid), pid)
    return {stat.pgid for stat in descendants(pid, live)} - {own}


def test_the_groups_from_child_lists_are_those_of_the_whole_table() -> None:
    cli = subprocess.Popen(["sh", "-c", "setsid sleep 60 & setsid sh -c 'sleep 60 & sleep 60' & sleep 60"],
                           start_new_session=True)
    found: set[int] = set()
    try:
        deadline = time.monotonic() + 10
        while len(found) < 2 and time.monotonic() < deadline:  # the two detached tools have started
            found = tree.descendant_groups(cli.pid)
        assert len(found) == 2 and cli.pid not in found
        assert found == by_whole_table(cli.pid)
        assert tree._tree(cli.pid) is not None  # this kernel keeps child lists: the fast path was taken
    finally:
        for group in {*found, cli.pid}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        cli.wait()


def test_a_process_that_is_gone_has_no_groups() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert tree.descendant_groups(gone.pid) == set()


async def test_the_trackers_first_scan_holds_the_groups_from_before_it_started() -> None:
    cli = subprocess.Popen(["sh", "-c", "setsid sleep 60 & read line; setsid sleep 60 & sleep 60"],
                           start_new_session=True, stdin=subprocess.PIPE)
    assert cli.stdin is not None
    tracker = tree.GroupTracker(cli.pid, interval=0.01)
    try:
        async with asyncio.timeout(10):
            while not tree.descendant_groups(cli.pid):  # the first detached tool has started
                await asyncio.sleep(0.01)
            before = tree.descendant_groups(cli.pid)
            tracker.start()
            assert await tracker.first_scan() == before
            cli.stdin.write(b"go\n")
            cli.stdin.flush()  # a second tool, after tracking started
            while len(tracker.groups) < 2:
                await asyncio.sleep(0.01)
        assert await tracker.first_scan() == before  # the first scan, not the latest
        assert before < tracker.groups
    finally:
        await tracker.kill()
        os.killpg(cli.pid, signal.SIGKILL)
        cli.wait()
    assert await tracker.first_scan() == before


async def test_a_tracker_stopped_before_its_first_scan_has_none() -> None:
    assert await tree.GroupTracker(os.getpid()).first_scan() is None  # never started
    tracker = tree.GroupTracker(os.getpid()).start()
    await tracker.stop()  # before the loop ran its first step
    assert await tracker.first_scan() is None


async def test_a_tracker_told_to_wait_scans_first_after_that_and_tracks_known_groups_meanwhile() -> None:
    """A Claude turn's tracker: its first scan ``first_after`` its start (a turn that ends sooner costs none), the
    groups an earlier turn saw (``known``) tracked from the start and ended by ``kill()`` with the rest."""
    cli = subprocess.Popen(["sh", "-c", "setsid sleep 60 & sleep 60"], start_new_session=True)
    earlier = subprocess.Popen(["sleep", "60"], start_new_session=True)  # a group an earlier turn saw
    loop = asyncio.get_running_loop()
    tracker = tree.GroupTracker(cli.pid, interval=0.01, first_after=0.2, known={earlier.pid})
    found: set[int] | None = set()
    try:
        async with asyncio.timeout(10):
            while not tree.descendant_groups(cli.pid):  # the detached tool has started
                await asyncio.sleep(0.01)
            started = loop.time()
            tracker.start()
            assert tracker.groups == {earlier.pid}  # before any scan
            found = await tracker.first_scan()
            assert loop.time() - started >= 0.2
        assert found and earlier.pid not in found and tracker.groups == found | {earlier.pid}
        assert tracker.live_groups() == tracker.groups
        await tracker.kill()
        assert not tree.group_exists(earlier.pid) and not any(tree.group_exists(g) for g in found)
    finally:
        for group in {*(found or ()), cli.pid, earlier.pid}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        cli.wait()
        earlier.wait()


SLEEPER = "import time; time.sleep(600)"
# A tool that starts a process of its own in yet another session and writes its pid to argv[1].
DETACHING_TOOL = ("import subprocess, sys; below = subprocess.Popen([sys.executable, '-c', 'import time; "
                  "time.sleep(600)'], start_new_session=True); open(sys.argv[1], 'w').write(str(below.pid)); "
                  "below.wait()")


def detaches_a_tool_then_dies(pid_file: Path, tool: str = SLEEPER, *tool_args: str) -> list[str]:
    """A CLI that starts a tool in a session of its own (its output its own, as a CLI reads a tool's), writes the
    tool's pid, and is SIGKILLed at once (once ``tool_args``' files exist, when it has some)."""
    return [sys.executable, "-c", textwrap.dedent(f"""
        import os, signal, subprocess, sys, time
        tool = subprocess.Popen([sys.executable, "-c", {tool!r}, *{list(tool_args)!r}], start_new_session=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open({str(pid_file)!r}, "w").write(str(tool.pid))
        while not all(os.path.getsize(f) if os.path.exists(f) else 0 for f in {list(tool_args)!r}):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
    """)]


async def test_a_tool_younger_than_any_scan_ends_with_its_killed_cli_and_no_other_clis_tool_does(
        tmp_path: Path) -> None:
    """The CLI dies before the tracker's first scan: its tool, re-parented to the runner (a subreaper), carries
    the CLI's tag and is killed with the CLI's groups; a tool of another CLI, orphaned alike, is not."""
    become_subreaper()
    clis = [await SupervisedProcess.start(detaches_a_tool_then_dies(tmp_path / name), cwd=tmp_path,
                                          env=dict(os.environ)) for name in ("first", "second")]
    trackers = [tree.GroupTracker(cli.pid, first_after=3600, tag=cli.tag).start() for cli in clis]
    try:
        for cli in clis:
            assert await asyncio.wait_for(cli.wait(), 30) == -signal.SIGKILL
        first, second = (int((tmp_path / name).read_text()) for name in ("first", "second"))
        assert tree.group_exists(first) and tree.group_exists(second)  # in no group a tracker saw
        await trackers[0].kill()
        assert not tree.group_exists(first)  # killed, and reaped
        assert tree.group_exists(second)
        await trackers[1].kill()
        assert not tree.group_exists(second)
    finally:
        for tracker in trackers:
            await tracker.kill()
        for cli in clis:
            await cli.stop()


def test_a_tagged_child_in_the_runners_own_group_is_never_its_groups_to_end() -> None:
    """A CLI started without a group of its own (no setsid) leaves its orphans in the runner's group: the tag scan
    finds them, and never names that group (ending it would end the runner)."""
    env, tag = tree.tagged(os.environ)
    inside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=env)
    apart = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while tree.tagged_orphan_groups(tag) != {apart.pid}:  # each has exec'd with the tag
            assert time.monotonic() < deadline, tree.tagged_orphan_groups(tag)
            time.sleep(0.01)
        assert os.getpgid(inside.pid) == os.getpgrp()
    finally:
        for child in (inside, apart):
            child.kill()
            child.wait()


async def test_a_process_its_tool_detached_ends_too(tmp_path: Path) -> None:
    """The killed CLI's tool had started a process in a session of its own: once the tool is ended, that process is
    re-parented to the runner, and the next round of the kill ends it."""
    become_subreaper()
    below_file = tmp_path / "below"
    cli = await SupervisedProcess.start(detaches_a_tool_then_dies(tmp_path / "tool", DETACHING_TOOL, str(below_file)),
                                        cwd=tmp_path, env=dict(os.environ))
    tracker = tree.GroupTracker(cli.pid, first_after=3600, tag=cli.tag).start()
    try:
        assert await asyncio.wait_for(cli.wait(), 30) == -signal.SIGKILL
        tool, below = int((tmp_path / "tool").read_text()), int(below_file.read_text())
        assert tree.group_exists(tool) and tree.group_exists(below)
        await tracker.kill()
        assert not tree.group_exists(tool) and not tree.group_exists(below)
    finally:
        await tracker.kill()
        await cli.stop()
