"""Packing and unpacking the state dir: round trip, excludes, credentials, sockets, symlinks, SQLite, unsafe
archives, and a corrupt archive leaving the state dir alone."""

from __future__ import annotations

import io
import os
import socket
import sqlite3
import tarfile
from pathlib import Path

import pytest

from ambient_runner.state.snapshot import MANIFEST_NAME, ExcludeRules, fingerprint, pack, read_manifest, unpack


def tree(root: Path) -> dict[str, str]:
    """relative path -> content (files), '->target' (symlinks), '/' (dirs)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "->" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "/"
        else:
            out[rel] = path.read_text(errors="replace")
    return out


def members(archive: Path) -> list[str]:
    with tarfile.open(archive, "r:gz") as tar:
        return tar.getnames()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def test_round_trip_keeps_files_dirs_links_and_modes(tmp_path: Path) -> None:
    src = tmp_path / "a" / ".gemini"
    write(src, {"settings.json": "{}", "tmp/proj/chats/session-1.jsonl": '{"x":1}\n',
                "ambient-runner-sessions.json": '{"threads": {"t1": "s1"}}', "projects.json": "[]"})
    (src / "empty-dir").mkdir()
    (src / "link").symlink_to("tmp/proj")
    (src / "settings.json").chmod(0o600)
    archive = tmp_path / "state.tar.gz"
    result = pack(src, archive, [], {"generation": 7})
    assert result.files == 4 and result.skipped == []
    assert members(archive)[0] == MANIFEST_NAME
    assert read_manifest(archive) == {"generation": 7}

    dest = tmp_path / "b" / ".gemini"
    assert unpack(archive, dest) == {"generation": 7}
    assert tree(dest) == tree(src)
    assert (dest / "settings.json").stat().st_mode & 0o777 == 0o600
    assert not (dest / MANIFEST_NAME).exists()
    assert [p.name for p in dest.parent.iterdir()] == [".gemini"]  # no staging dir left behind


def test_excludes_bridge_globs_credentials_own_temp_files_and_sockets(tmp_path: Path) -> None:
    src = tmp_path / "state"
    write(src, {
        "keep.json": "k", "logs/today.log": "l", "deep/er/x.log": "l", "cache/blob": "c", "sub/cache/blob": "c",
        "tmp/p/chats/c.json": "chat", "tmp/p/shell_history": "h",
        "oauth_creds.json": "secret", "google_accounts.json": "secret", ".credentials.json": "secret",
        "auth.json": "secret", "nested/auth.json": "secret",
        ".ambient-runner-sync.json": "marker", ".ambient-runner-sync-1.tar.gz": "tmp",
        ".ambient-runner-sessions.json.123.tmp": "half", "ambient-runner-sessions.json": "{}",
    })
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(src / "agent.sock"))
        os.mkfifo(src / "fifo")
        archive = tmp_path / "state.tar.gz"
        pack(src, archive, ["*.log", "cache", "tmp/*/shell_history"], {})
    assert sorted(members(archive)) == sorted([
        MANIFEST_NAME, "ambient-runner-sessions.json", "deep", "deep/er", "keep.json", "logs", "sub",
        "tmp", "tmp/p", "tmp/p/chats", "tmp/p/chats/c.json", "nested"])


def test_exclude_rules_match_components_and_paths() -> None:
    rules = ExcludeRules(["cache", "tmp/*/logs", "*.db-journal"])
    assert rules.excluded("cache") and rules.excluded("a/cache/b")
    assert rules.excluded("tmp/x/logs") and rules.excluded("tmp/x/logs/1")
    assert not rules.excluded("tmp/x/chats/logs.json") and not rules.excluded("cached")
    assert rules.excluded("x/y.db-journal")


def test_symlinks_out_of_the_state_dir_are_not_packed(tmp_path: Path) -> None:
    src = tmp_path / "state"
    write(src, {"in/file": "x"})
    (tmp_path / "outside").write_text("host file")
    (src / "abs").symlink_to(tmp_path / "outside")
    (src / "rel").symlink_to("../outside")
    (src / "ok").symlink_to("in/file")
    archive = tmp_path / "s.tar.gz"
    result = pack(src, archive, [], {})
    assert sorted(members(archive)) == [MANIFEST_NAME, "in", "in/file", "ok"]
    assert sorted(s.split(" ")[0] for s in result.skipped) == ["abs", "rel"]


def test_sqlite_in_wal_mode_is_copied_consistently_while_open(tmp_path: Path) -> None:
    src = tmp_path / "state"
    src.mkdir()
    db = sqlite3.connect(src / "state_5.sqlite")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")  # keep the rows in the WAL only
    db.execute("CREATE TABLE threads (id TEXT, body TEXT)")
    db.executemany("INSERT INTO threads VALUES (?, ?)", [(f"t{i}", "x" * 500) for i in range(200)])
    db.commit()
    assert (src / "state_5.sqlite-wal").stat().st_size > 0
    archive = tmp_path / "s.tar.gz"
    pack(src, archive, [], {})  # the connection is still open with uncheckpointed WAL
    db.close()
    assert sorted(members(archive)) == [MANIFEST_NAME, "state_5.sqlite"]
    dest = tmp_path / "restored"
    unpack(archive, dest)
    copy = sqlite3.connect(dest / "state_5.sqlite")
    assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert copy.execute("SELECT count(*) FROM threads").fetchone() == (200,)
    copy.close()


def test_unpack_replaces_existing_entries_and_keeps_others(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src, {"a.json": "new", "d/x": "new x"})
    archive = tmp_path / "s.tar.gz"
    pack(src, archive, [], {})
    dest = tmp_path / "dest"
    write(dest, {"a.json": "old", "d/y": "local y", "oauth_creds.json": "from secret"})
    unpack(archive, dest)
    assert tree(dest) == {"a.json": "new", "d": "/", "d/x": "new x", "d/y": "local y",
                          "oauth_creds.json": "from secret"}


def test_unpack_skips_members_that_would_escape(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in [(MANIFEST_NAME, b'{"generation": 1}'), ("../escape", b"x"), ("/abs", b"x"),
                           ("fine.txt", b"ok")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("evil-link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    dest = tmp_path / "root" / "state"
    unpack(archive, dest)
    assert tree(dest) == {"abs": "x", "fine.txt": "ok"}  # a leading "/" is dropped: it lands inside
    assert sorted(p.name for p in (tmp_path / "root").iterdir()) == ["state"]


def test_a_corrupt_archive_leaves_the_state_dir_alone(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src, {f"f{i}": os.urandom(4096).hex() for i in range(20)})
    archive = tmp_path / "s.tar.gz"
    pack(src, archive, [], {})
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])  # a truncated download
    dest = tmp_path / "dest"
    write(dest, {"f0": "previous"})
    with pytest.raises((EOFError, tarfile.TarError, OSError)):
        unpack(archive, dest)
    assert tree(dest) == {"f0": "previous"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest", "s.tar.gz", "src"]


def test_fingerprint_changes_with_content_but_not_with_excluded_files(tmp_path: Path) -> None:
    src = tmp_path / "s"
    write(src, {"a": "1", "cache/x": "1"})
    first = fingerprint(src, ["cache"])
    (src / "cache" / "x").write_text("22")
    assert fingerprint(src, ["cache"]) == first
    (src / "a").write_text("22")
    assert fingerprint(src, ["cache"]) != first
