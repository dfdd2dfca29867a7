"""The process layer's own errors (the bridge layer turns them into ``BridgeError``, the run's ``RUN_ERROR``)."""

from __future__ import annotations

from ag_ui_cli_common.errors import ErrorCode, RunnerError


class ProcessStartError(RunnerError):
    """A CLI that could not be started. ``code`` is the ``RUN_ERROR`` code it becomes (``ErrorCode.CLI_NOT_FOUND``)."""

    code = ErrorCode.CLI_NOT_FOUND
