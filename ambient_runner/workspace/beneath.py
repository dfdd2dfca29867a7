"""Opening paths beneath the workspace root as one operation, so that no folder swapped for a link mid-call can lead
a read, write or delete outside it.

Every path is opened from a descriptor of the workspace root with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)``
(Linux 5.6+): the kernel follows links that stay beneath the root and refuses any that leave it, at the moment of
opening. Where the kernel has no ``openat2`` (or a sandbox forbids it), each component is opened with ``O_NOFOLLOW``
from its parent's descriptor instead: no link is followed at all. The real path of an opened descriptor
(``/proc/self/fd``) is what is checked against the runner's state dir. Files are then read, written (a temporary file
in the final directory, renamed there) and unlinked through these descriptors, never by name from the root.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from ambient_runner.workspace.paths import LinkRefused, PathRefused

SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}.get(os.uname().machine)
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_libc = ctypes.CDLL(None, use_errno=True)
_openat2_works: bool | None = None  # learnt at the first call


def _openat2(dir_fd: int, path: str, flags: int) -> int:
    how = struct.pack("QQQ", flags, 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(SYS_OPENAT2, dir_fd, os.fsencode(path), how, len(how))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return int(fd)


def _walk_nofollow(dir_fd: int, path: str, flags: int) -> int:
    """``path`` opened component by component, no link followed (the fallback without ``openat2``)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    current = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            following = os.open(part, DIRECTORY | os.O_NOFOLLOW, dir_fd=current)
            os.close(current)
            current = following
        return os.open(parts[-1] if parts else ".", flags | os.O_NOFOLLOW, dir_fd=current)
    finally:
        os.close(current)


def open_beneath(root_fd: int, path: str, flags: int) -> int:
    """A descriptor of ``path`` (relative to ``root_fd``) opened without leaving the root; ``OSError`` otherwise
    (``EXDEV``/``ELOOP``: a link that leaves it)."""
    global _openat2_works
    path = path.strip("/") or "."
    if SYS_OPENAT2 is not None and _openat2_works is not False:
        try:
            fd = _openat2(root_fd, path, flags)
            _openat2_works = True
            return fd
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EPERM) or _openat2_works:
                raise
            _openat2_works = False
    return _walk_nofollow(root_fd, path, flags)


def real_path(fd: int) -> Path:
    return Path(os.readlink(f"/proc/self/fd/{fd}"))


def _refusal(shown: str, exc: OSError) -> PathRefused | OSError:
    if exc.errno in (errno.EXDEV, errno.ELOOP):
        return LinkRefused(f"{shown} leads out of the workspace through a symbolic link; not followed")
    if exc.errno == errno.ENOTDIR:
        return PathRefused(f"{shown}: a part of the path is not a folder")
    return exc


class Beneath:
    """The workspace root as a descriptor, and the state dirs no call may reach."""

    def __init__(self, root: Path, forbidden: Callable[[Path], bool]) -> None:
        self.root = root
        self.forbidden = forbidden

    @contextlib.contextmanager
    def opened(self, relative: str, flags: int = DIRECTORY, *, shown: str = "") -> Iterator[int]:
        """``relative`` opened beneath the root (checked against the state dir through the descriptor)."""
        shown = shown or f"/{relative.strip('/')}"
        root_fd = os.open(self.root, DIRECTORY)
        try:
            try:
                fd = open_beneath(root_fd, relative, flags)
            except OSError as exc:
                retry = self._absolute_link_inside(relative) if exc.errno == errno.EXDEV else None
                if retry is None:
                    raise _refusal(shown, exc) from None
                try:  # a link written as an absolute path that names a place inside: opened there, beneath the root
                    fd = open_beneath(root_fd, retry, flags)
                except OSError as again:
                    raise _refusal(shown, again) from None
        finally:
            os.close(root_fd)
        try:
            if self.forbidden(real_path(fd)):
                raise PathRefused("the path is the runner's state dir")
            yield fd
        finally:
            os.close(fd)

    def _absolute_link_inside(self, relative: str) -> str | None:
        """Where ``relative`` leads by name, relative to the root, when that is inside (``RESOLVE_BENEATH`` refuses
        every absolute link, also one naming a place inside the workspace); the open that follows is checked again."""
        try:
            target = (self.root / relative).resolve()
        except (OSError, RuntimeError):
            return None
        if target == self.root or self.root in target.parents:
            inside = target.relative_to(self.root).as_posix()
            return None if inside == relative.strip("/") else inside
        return None

    @contextlib.contextmanager
    def parent(self, relative: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """The descriptor of ``relative``'s folder (made when ``create``, one component at a time, each opened
        beneath the root) and the last component's name."""
        parts = [p for p in relative.split("/") if p not in ("", ".")]
        if not parts:
            raise PathRefused("the path is the workspace itself")
        folder, name = "/".join(parts[:-1]), parts[-1]
        if create:
            self.make_folders(folder)
        with self.opened(folder, shown=f"/{folder}") as fd:
            yield fd, name

    def make_folders(self, relative: str) -> None:
        """``relative``'s folders made one at a time, each opened beneath the root before the next is made in it."""
        parts = [p for p in relative.split("/") if p not in ("", ".")]
        for depth in range(1, len(parts) + 1):
            with self.opened("/".join(parts[:depth - 1])) as fd, contextlib.suppress(FileExistsError):
                os.mkdir(parts[depth - 1], 0o775, dir_fd=fd)
