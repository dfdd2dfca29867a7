"""Landlock (Linux 5.13+): confine the calling process, for the rest of its life, to the folders it is given.

``confine(writable, readable)`` handles every file-system right the kernel knows and then allows, beneath each
``writable`` path, all of them, and beneath each ``readable`` path, reading (and executing). Everything else, links
leading elsewhere included (Landlock checks where a path really is, at the moment of each access), is ``EACCES``.
Returns False where the kernel has no Landlock (the caller's other checks still stand).
"""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same numbers on x86_64 and aarch64
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FILE_RIGHTS_V1 = EXECUTE | WRITE_FILE | READ_FILE
ALL_V1 = (1 << 13) - 1  # execute, write/read file, read dir, remove dir/file, make char/dir/reg/sock/fifo/block/sym
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_libc = ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI (0: none)."""
    version = _libc.syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _handled(abi: int) -> int:
    rights = ALL_V1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"landlock {what}: {os.strerror(code)}")
    return result


def confine(writable: list[Path | int], readable: list[Path | int]) -> bool:
    """Allow only ``writable`` (everything) and ``readable`` (read, execute) from now on; False without Landlock.
    Each is a path or an open descriptor (``O_PATH``: the rule is that very folder, whatever its name leads to
    later)."""
    abi = abi_version()
    if abi < 1:
        return False
    handled = _handled(abi)
    attr = struct.pack("Q", handled)
    ruleset = _check(_libc.syscall(CREATE_RULESET, attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)), "ruleset")
    try:
        for paths, rights in ((writable, handled), (readable, EXECUTE | READ_FILE | READ_DIR)):
            for path in paths:
                _allow(ruleset, path, rights)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(RESTRICT_SELF, ruleset, ctypes.c_uint32(0)), "restrict_self")
    finally:
        os.close(ruleset)
    return True


def _allow(ruleset: int, path: Path | int, rights: int) -> None:
    try:
        fd = os.dup(path) if isinstance(path, int) else os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):  # a file takes file rights only
            rights &= FILE_RIGHTS_V1 | TRUNCATE | IOCTL_DEV
        rule = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr is packed
        _check(_libc.syscall(ADD_RULE, ruleset, ctypes.c_int(RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)), "rule")
    finally:
        os.close(fd)
