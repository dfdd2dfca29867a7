"""The ACP runner's session -> folder file (``moves.SessionFolders``, a ``SessionMap`` of its own): read on first use,
kept across a new instance (a restart), and a file that cannot be read or written loses only those moves, never a
turn; the thread map keeps refusing an unreadable file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ambient_runner.bridges.acp_client.moves import SessionFolders
from ambient_runner.bridges.session_map import FILE_NAME, SessionMap

NAME = "ambient-runner-session-folders.json"


def test_a_folder_is_kept_across_a_restart_and_read_on_first_use(tmp_path: Path) -> None:
    folders = SessionFolders(tmp_path / NAME)
    (tmp_path / NAME).write_text('{"version": 1, "sessions": {"s-0": "/restored"}}')  # restored after creation
    assert folders.get("s-0") == Path("/restored")
    folders.set("s-1", tmp_path / "workflows" / "bugfix")
    again = SessionFolders(tmp_path / NAME)
    assert again.get("s-1") == tmp_path / "workflows" / "bugfix" and again.get("s-0") == Path("/restored")
    assert again.get("s-2") is None
    assert SessionMap(tmp_path).get("s-1") is None  # its own file, beside the thread map's


@pytest.mark.parametrize("text", ["not json", "[]", '{"sessions": []}'])
def test_an_unreadable_file_is_taken_as_empty_and_then_replaced(tmp_path: Path, text: str) -> None:
    (tmp_path / NAME).write_text(text)
    folders = SessionFolders(tmp_path / NAME)
    assert folders.get("s-1") is None
    folders.set("s-1", tmp_path / "w")
    assert SessionFolders(tmp_path / NAME).get("s-1") == tmp_path / "w"


def test_the_thread_map_still_refuses_an_unreadable_file(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text("not json")
    with pytest.raises(RuntimeError, match="cannot read the session map"):  # it stops the runner's start
        SessionMap(tmp_path)


def test_a_write_that_fails_loses_only_the_move(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("a file where the state dir should be")
    folders = SessionFolders(blocked / NAME)
    folders.set("s-1", tmp_path / "w")  # logged, not raised
    assert folders.get("s-1") is None
