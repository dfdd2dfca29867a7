"""AG-UI adapter for claude-agent-sdk: SDK messages (or raw Claude Code stream-json) in, AG-UI events out."""

from ag_ui_claude.adapter import ClaudeEventAdapter, translate
from ag_ui_claude.errors import describe_failure
from ag_ui_claude.inputs import Unparsed, coerce

__all__ = ["ClaudeEventAdapter", "Unparsed", "coerce", "describe_failure", "translate"]
