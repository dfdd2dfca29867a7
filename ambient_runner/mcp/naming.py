"""How MCP tool calls are named in the AG-UI stream, for all three runners: ``mcp__<server>__<tool>``.

Claude Code and Codex already use that name; the Gemini CLI declares ``mcp_<server>_<tool>`` and its bridge
renames those (``from_gemini``) using the configured server names.
"""

from __future__ import annotations

from collections.abc import Iterable

PREFIX = "mcp__"


def agui_tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{server}__{tool}"


def split_tool_name(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` of an AG-UI MCP tool name, else ``None``."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX):].partition("__")
    return (server, tool) if sep and server and tool else None


def from_gemini(name: str, servers: Iterable[str]) -> str:
    """``mcp_<server>_<tool>`` (the Gemini CLI's name) -> ``mcp__<server>__<tool>``; other names unchanged.

    The longest matching server name wins (servers ``a`` and ``a_b``: ``mcp_a_b_x`` is ``a_b``'s ``x``).
    """
    for server in sorted(servers, key=len, reverse=True):
        prefix = f"mcp_{server}_"
        if name.startswith(prefix) and len(name) > len(prefix):
            return agui_tool_name(server, name[len(prefix):])
    return name
