"""The Files tab: list, read, write (atomically) and delete files in the workspace.

Blocking file-system work; the API runs it in a thread. Each path is checked (``Workspace.parts``) and then opened
beneath the workspace root as one operation (``beneath.Beneath``): a folder swapped for a link while a call runs
makes it fail, and nothing outside the workspace is ever read, created, written or deleted.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from datetime import UTC, datetime
from typing import TypedDict

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.workspace.beneath import Beneath
from ambient_runner.workspace.paths import PathRefused, Workspace

MAX_LISTED = 10_000
READ = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO opens at once, and is then no file
PROBE = os.O_PATH | os.O_CLOEXEC


class NotFound(RunnerError, LookupError):
    code = ErrorCode.NOT_FOUND


class TooLarge(RunnerError, ValueError):
    code = ErrorCode.FILE_TOO_LARGE


def beneath(workspace: Workspace) -> Beneath:
    return Beneath(workspace.root, workspace.in_state_dir)


class Entry(TypedDict):
    """A file or folder as ``/content/list`` lists it."""

    name: str
    path: str
    isDir: bool
    size: int
    modifiedAt: str


def _item(name: str, shown: str, info: os.stat_result) -> Entry:
    return {"name": name, "path": shown, "isDir": stat.S_ISDIR(info.st_mode), "size": info.st_size,
            "modifiedAt": datetime.fromtimestamp(info.st_mtime, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def _shown(relative: str) -> str:
    return f"/{relative}" if relative else "/"


def _missing(raw: str) -> NotFound:
    return NotFound(f"{raw or '/'} does not exist")


def list_dir(workspace: Workspace, raw: str) -> list[Entry]:
    """The entries of a directory (or the one file), sorted by name; the state dir and links leading out left out."""
    relative, root = workspace.parts(raw), beneath(workspace)
    try:
        with root.opened(relative, PROBE) as fd:
            info = os.fstat(fd)
            if not stat.S_ISDIR(info.st_mode):
                return [_item(relative.rsplit("/", 1)[-1], _shown(relative), info)]
        with root.opened(relative) as fd:
            names = sorted(os.listdir(fd))[:MAX_LISTED]
    except FileNotFoundError:
        raise _missing(raw) from None
    items: list[Entry] = []
    for name in names:
        child = f"{relative}/{name}" if relative else name
        try:  # a link is listed only when it stays inside (and out of the state dir); what it leads to is shown
            with root.opened(child, PROBE) as fd:
                items.append(_item(name, _shown(child), os.fstat(fd)))
        except (PathRefused, OSError):
            continue
    return items


def read_file(workspace: Workspace, raw: str, limit: int) -> tuple[str, bytes]:
    """``(its name, its bytes)``."""
    relative = workspace.parts(raw)
    if not relative:
        raise PathRefused("the path is the workspace itself")
    try:
        with beneath(workspace).opened(relative, READ) as fd:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NotFound(f"{raw} is not a file")
            if info.st_size > limit:
                raise TooLarge(f"{raw} is {info.st_size} bytes, more than {limit} (RUNNER_MAX_FILE_BYTES)")
            with os.fdopen(os.dup(fd), "rb") as source:
                data = source.read(limit + 1)
    except (FileNotFoundError, IsADirectoryError):
        raise _missing(raw) from None
    if len(data) > limit:
        raise TooLarge(f"{raw} is more than {limit} bytes (RUNNER_MAX_FILE_BYTES)")
    return relative.rsplit("/", 1)[-1], data


def read_text(workspace: Workspace, relative: str, limit: int = 1024 * 1024) -> str | None:
    """A text file of the workspace (``None`` when it is absent or not a file); a link out is ``LinkRefused``."""
    try:
        with beneath(workspace).opened(relative, READ) as fd:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            with os.fdopen(os.dup(fd), "rb") as source:
                return source.read(limit).decode("utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def names_in(workspace: Workspace, relative: str) -> list[str]:
    """The names in a workspace folder (none when it is absent); a link out is ``LinkRefused``."""
    try:
        with beneath(workspace).opened(relative) as fd:
            return sorted(os.listdir(fd))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _lstat(name: str, folder: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def write_file(workspace: Workspace, raw: str, data: bytes) -> str:
    """Write ``data`` to ``raw`` atomically (a temporary file in the same folder, renamed there); its ``/path``."""
    relative = workspace.parts(raw)
    with beneath(workspace).parent(relative, create=True) as (folder, name):
        existing = _lstat(name, folder)
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            raise PathRefused(f"{raw} is a symbolic link; write to the file it names")
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise PathRefused(f"{raw} is a directory")
        temporary = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                os.fchmod(out.fileno(), stat.S_IMODE(existing.st_mode) if existing is not None else 0o664)
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
    return _shown(relative)


def delete_file(workspace: Workspace, raw: str) -> None:
    """Delete a file; a link is removed itself (never what it names), and only when it stays inside."""
    relative = workspace.parts(raw)
    root = beneath(workspace)
    with root.parent(relative) as (folder, name):
        existing = _lstat(name, folder)
        if existing is None:
            raise _missing(raw)
        if stat.S_ISDIR(existing.st_mode):
            raise PathRefused(f"{raw} is a directory; the Files tab deletes files")
        if stat.S_ISLNK(existing.st_mode):
            with contextlib.suppress(FileNotFoundError), root.opened(relative, PROBE):
                pass  # refused when the link leads out or into the state dir
        os.unlink(name, dir_fd=folder)


__all__ = ["Entry", "NotFound", "TooLarge", "delete_file", "list_dir", "names_in", "read_file", "read_text",
           "write_file"]
