"""Network isolation for tests: move the test process into a network namespace that has only loopback.

Real CLIs never reach the internet in tests. ``isolate_network()`` is called once at the start of the test
session (``tests/conftest.py``): it unshares the network namespace of the pytest process itself
(``unshare(CLONE_NEWNET)``, root or user namespaces needed) and brings ``lo`` up, so every CLI, fake model
server and runner the tests start lives in a namespace whose only interface is loopback.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def interfaces() -> list[str]:
    """Interfaces of the current network namespace (from /proc/self/net/dev, which follows the netns)."""
    with open("/proc/self/net/dev") as dev:
        lines = dev.read().splitlines()[2:]
    return [line.split(":", 1)[0].strip() for line in lines if ":" in line]


def is_isolated() -> bool:
    """True when the only interface is loopback and it is up, so only 127.0.0.0/8 is reachable."""
    if interfaces() != ["lo"]:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack("16sH", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, struct.pack("16sH", b"lo", 0)))[1]
    return bool(flags & IFF_UP)


def _bring_loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def isolate_network() -> str | None:
    """Enter a loopback-only network namespace. Returns None on success, else why it was not possible."""
    if is_isolated():
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWNET | CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        return f"unshare(CLONE_NEWNET) failed: {os.strerror(ctypes.get_errno())}"
    try:
        _bring_loopback_up()
    except OSError as exc:
        return f"could not bring lo up in the new network namespace: {exc}"
    return None if is_isolated() else f"namespace still has interfaces {interfaces()}"
