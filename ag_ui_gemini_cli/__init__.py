"""AG-UI adapters for the Gemini CLI: its ``--output-format stream-json`` lines (``GeminiCliAdapter``) and its ACP
messages (``gemini --acp``, ``GeminiAcpAdapter``). No process handling."""

from ag_ui_gemini_cli.acp import GeminiAcpAdapter
from ag_ui_gemini_cli.adapter import SOURCE, WARNING_EVENT, GeminiCliAdapter
from ag_ui_gemini_cli.errors import describe_error, describe_exit
from ag_ui_gemini_cli.events import GeminiLine, UnparsedLine, parse_line

__all__ = [
    "SOURCE", "WARNING_EVENT", "GeminiAcpAdapter", "GeminiCliAdapter", "GeminiLine", "UnparsedLine",
    "describe_error", "describe_exit", "parse_line",
]
