"""The Files tab: list, read, write (atomically) and delete files in the workspace.

Blocking file-system work; the API runs it in a thread. Every path comes through ``Workspace.resolve``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ambient_runner.workspace.paths import PathRefused, Workspace

MAX_LISTED = 10_000


class NotFound(LookupError):
    pass


class TooLarge(ValueError):
    pass


def _item(workspace: Workspace, path: Path) -> dict[str, Any] | None:
    try:
        stat = path.stat()
    except OSError:  # a dangling symlink, a file gone meanwhile
        return None
    return {"name": path.name, "path": workspace.relative(path), "isDir": path.is_dir(), "size": stat.st_size,
            "modifiedAt": datetime.fromtimestamp(stat.st_mtime, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def list_dir(workspace: Workspace, raw: str) -> list[dict[str, Any]]:
    """The entries of a directory (or the one file), sorted by name; the state dir and escaping links left out."""
    target = workspace.resolve(raw)
    if not target.exists():
        raise NotFound(f"{raw or '/'} does not exist")
    if not target.is_dir():
        item = _item(workspace, target)
        return [item] if item else []
    items: list[dict[str, Any]] = []
    for entry in sorted(target.iterdir(), key=lambda e: e.name)[:MAX_LISTED]:
        try:
            workspace.check(target / entry.name)
        except PathRefused:
            continue
        item = _item(workspace, target / entry.name)
        if item is not None:
            items.append(item)
    return items


def read_file(workspace: Workspace, raw: str, limit: int) -> tuple[Path, bytes]:
    target = workspace.resolve(raw, allow_root=False)
    if not target.is_file():
        raise NotFound(f"{raw} is not a file" if target.exists() else f"{raw} does not exist")
    size = target.stat().st_size
    if size > limit:
        raise TooLarge(f"{raw} is {size} bytes, more than {limit} (RUNNER_MAX_FILE_BYTES)")
    return target, target.read_bytes()


def write_file(workspace: Workspace, raw: str, data: bytes) -> Path:
    """Write ``data`` to ``raw`` atomically (a temporary file in the same directory, then a rename)."""
    target = workspace.resolve(raw, allow_root=False)
    if target.is_dir():
        raise PathRefused(f"{raw} is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    workspace.check(target.parent)  # the parent, once it exists, is still inside
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o664
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def delete_file(workspace: Workspace, raw: str) -> None:
    target = workspace.resolve(raw, allow_root=False)
    link = workspace.lexical(raw)
    if link.is_symlink():  # a link inside the workspace: remove the link, never what it points at
        link.unlink()
        return
    if not target.exists():
        raise NotFound(f"{raw} does not exist")
    if target.is_dir():
        raise PathRefused(f"{raw} is a directory; the Files tab deletes files")
    target.unlink()
