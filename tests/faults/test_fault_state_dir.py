"""The state dir cannot be written (a read-only mount) or its disk is full (a 1 MB tmpfs, filled up), for each
real runner: the run ends with one terminal event whose error names the cause, no CLI process is left over, and
once the disk is writable again the thread takes a next run.

Tests run as root, so ``chmod`` would not stop a write: the state root is a real mount (a read-only bind mount,
or a small tmpfs) under the test's own tmp dir, unmounted afterwards. The mount is made in the machine's mount
namespace, not a private one: a mount namespace is per thread, and the CLIs are started from several threads of
this process (the Codex SDK's reader threads, asyncio's executor), which a private namespace would not cover.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from runners import PLAIN_PROMPT, RUNNERS, descendants, scripted_runner, wait_gone

CAUSE = re.compile(r"read-only|no space|ENOSPC|EROFS|disk|not writable|cannot write|failed to initialize .*state",
                   re.IGNORECASE)


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def state_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "state"
    root.mkdir()
    try:
        yield root
    finally:
        while subprocess.run(["umount", "-l", str(root)], capture_output=True).returncode == 0:
            pass  # every mount stacked on it


def fill(directory: Path) -> None:
    """Write zeros until the file system is full (the CLI's own files may already have filled it)."""
    for name, block in (("filler.bin", 65536), ("filler2.bin", 512)):
        try:
            with open(directory / name, "wb") as out:
                while True:
                    out.write(b"\0" * block)
                    out.flush()
        except OSError:
            pass


@pytest.mark.real_cli
@pytest.mark.usefixtures("isolated_network")
@pytest.mark.parametrize("problem", ["read-only", "disk-full"])
@pytest.mark.parametrize("runner_type", RUNNERS)
async def test_state_dir_unwritable(runner_type: str, problem: str, state_root: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount")
    if problem == "disk-full":
        mount("-t", "tmpfs", "-o", "size=16m", "tmpfs", str(state_root))
    else:
        mount("--bind", str(state_root), str(state_root))
    async with scripted_runner(runner_type, tmp_path, monkeypatch, runner_state_root=state_root,
                               runner_idle_timeout=60) as r:
        old = {pgid for pgid, _ in descendants().values()}
        if problem == "disk-full":
            fill(state_root)
        else:
            mount("-o", "remount,bind,ro", str(state_root))
        events = await asyncio.wait_for(r.harness.run("t-disk", "NOTOOL hello"), 120)
        groups = {pgid for pgid, _ in descendants().values()} - old - {os.getpgid(0)}
        assert await wait_gone(groups, r) == [], r.strays(groups)
        if problem == "disk-full":
            for name in ("filler.bin", "filler2.bin"):
                (state_root / name).unlink(missing_ok=True)
        else:
            mount("-o", "remount,bind,rw", str(state_root))
        after = await asyncio.wait_for(r.harness.run("t-disk", PLAIN_PROMPT), 120)
        assert after[-1]["type"] == "RUN_FINISHED", after[-1]
    print(f"{runner_type} {problem}: {events[-1]['type']} {events[-1].get('code')}: "
          f"{events[-1].get('message', '')[:300]!r}")
    assert events[-1]["type"] == "RUN_ERROR", events[-1]
    assert CAUSE.search(events[-1]["message"]), events[-1]["message"]


def test_session_map_keeps_no_entry_it_could_not_write(tmp_path: Path) -> None:
    from ambient_runner.bridges.session_map import SessionMap

    sessions = SessionMap(tmp_path / "state")
    (tmp_path / "state").write_text("a file where the state dir should be")  # every write now fails
    with pytest.raises(OSError):
        sessions.set("t1", "session-1")
    assert sessions.get("t1") is None  # not remembered: a later set() writes it instead of being a no-op
