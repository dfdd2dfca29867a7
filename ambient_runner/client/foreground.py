"""Ctrl-C for a runner that ``make run`` started: only the runner gets it, so ``make`` ends with the runner's 0.

A terminal's Ctrl-C sends SIGINT to its whole foreground process group: ``make`` as well as the runner, and
``make`` then stops with ``*** [run] Interrupt`` and status 130 whatever the runner did. Under ``make`` (``MAKELEVEL``
set) with a terminal, the runner moves into a process group of its own and makes it the terminal's foreground, as
a shell does for a job; the terminal is handed back to ``make``'s group when the runner ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def own_foreground() -> Iterator[None]:
    tty = _terminal()
    if tty is None or not os.environ.get("MAKELEVEL"):
        yield
        return
    try:
        previous = os.tcgetpgrp(tty)
        if previous != os.getpgrp():  # not the terminal's foreground job: leave it as it is
            tty = None
        else:
            os.setpgid(0, 0)
            _set_foreground(tty, os.getpgrp())
    except OSError:
        tty = None
    try:
        yield
    finally:
        if tty is not None:
            with contextlib.suppress(OSError):
                _set_foreground(tty, previous)


def _terminal() -> int | None:
    try:
        return sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
    except (OSError, ValueError):
        return None


def _set_foreground(tty: int, group: int) -> None:
    """``tcsetpgrp`` from a process that may be in the background (SIGTTOU ignored meanwhile, as shells do)."""
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(tty, group)
    finally:
        signal.signal(signal.SIGTTOU, previous)
