"""What the three adapters (``ag_ui_gemini_cli``, ``ag_ui_codex_sdk``, ``ag_ui_claude``) share, with no runner
dependency: the adapter protocol and its base class (``adapter``), the block tracker (``blocks``), and the one
failure type with its error codes and HTTP-status / exit mapping, and the runner's root error (``errors``)."""

from ag_ui_cli_common.adapter import Adapter, CliAdapter, Exit
from ag_ui_cli_common.blocks import BlockTracker
from ag_ui_cli_common.errors import (
    ErrorCode,
    Failure,
    RunnerError,
    code_for_exit,
    code_for_status,
    exit_failure,
    how_it_ended,
    signal_name,
    with_stderr,
)

__all__ = [
    "Adapter", "BlockTracker", "CliAdapter", "ErrorCode", "Exit", "Failure", "RunnerError", "code_for_exit",
    "code_for_status", "exit_failure", "how_it_ended", "signal_name", "with_stderr",
]
