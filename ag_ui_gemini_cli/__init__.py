"""AG-UI adapter for the Gemini CLI's ``--output-format stream-json`` output (no process handling)."""

from ag_ui_gemini_cli.adapter import SOURCE, WARNING_EVENT, GeminiCliAdapter
from ag_ui_gemini_cli.errors import describe_error, describe_exit
from ag_ui_gemini_cli.events import GeminiLine, UnparsedLine, parse_line

__all__ = [
    "SOURCE", "WARNING_EVENT", "GeminiCliAdapter", "GeminiLine", "UnparsedLine", "describe_error", "describe_exit",
    "parse_line",
]
