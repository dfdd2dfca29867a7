"""What the three adapters (``ag_ui_gemini_cli``, ``ag_ui_codex_sdk``, ``ag_ui_claude``) share, with no runner
dependency: the one set of ``RUN_ERROR`` codes and the one mapping of a provider's HTTP status to them."""

from ag_ui_cli_common.errors import ErrorCode, code_for_status

__all__ = ["ErrorCode", "code_for_status"]
