"""The runner process keeps its credentials to itself.

The runner's environment holds the real model key (the pod's secrets), and the agent's tools run as the same
user. ``make_undumpable`` sets ``PR_SET_DUMPABLE`` to 0: then ``/proc/<runner>/environ``, ``mem`` and ``ptrace``
need ``CAP_SYS_PTRACE``, which a pod's user does not have. The CLIs the runner starts are dumpable again (the flag
resets on ``execve``); they hold only the model proxy's placeholder.
"""

from __future__ import annotations

import ctypes

PR_SET_DUMPABLE = 4


def make_undumpable() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False

