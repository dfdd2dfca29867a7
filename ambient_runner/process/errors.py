"""The process layer's own errors (the bridge layer turns them into ``BridgeError``, the run's ``RUN_ERROR``)."""

from __future__ import annotations


class ProcessStartError(Exception):
    """A CLI that could not be started. ``code`` is the ``RUN_ERROR`` code it becomes ("CLI_NOT_FOUND")."""

    def __init__(self, message: str, *, code: str = "CLI_NOT_FOUND") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
