"""A run's frontend tools (``RunAgentInput.tools``) offered to Claude Code through an in-process SDK MCP server.

The tools are served by the runner itself (``create_sdk_mcp_server``: no port, no process). When Claude calls one,
the permission gate notes the call's id (``note_call``; the MCP handler is not told it), the handler waits for the
application's answer, and the run ends with ``outcome: success`` and the call in ``pendingToolCallIds``; the thread's
next run brings a ``role: "tool"`` message for that call, whose content is what the tool returns. The call is
streamed under the tool's own name, not Claude's ``mcp__frontend__<name>``.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ag_ui.core import Tool

from ambient_runner.bridges.frontend_tools import frontend_request, input_schema, result_of
from ambient_runner.interrupts.book import Answer, InterruptRequest, PendingInterrupt

SERVER = "frontend"
PREFIX = f"mcp__{SERVER}__"

Waiter = Callable[[str, str], Awaitable[Answer]]  # (thread id, tool name) -> the application's answer


def own_name(tool_name: str) -> str:
    """The frontend tool's own name for Claude's name of it (other names unchanged)."""
    return tool_name[len(PREFIX):] if tool_name.startswith(PREFIX) else tool_name


def is_frontend(tool_name: str) -> bool:
    return tool_name.startswith(PREFIX)


def tools_key(tools: Sequence[Tool]) -> str:
    """Names the tool set: a process offered another set is started again."""
    if not tools:
        return ""
    specs = sorted(json.dumps(t.model_dump(mode="json", exclude_none=True), sort_keys=True) for t in tools)
    return hashlib.sha256("\n".join(specs).encode()).hexdigest()[:16]


def server_config(thread_id: str, tools: Sequence[Tool], wait: Waiter) -> dict[str, Any]:
    """``mcp_servers`` entries offering ``tools`` (none when there are none)."""
    if not tools:
        return {}

    def handler_for(name: str) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
        async def handle(arguments: dict[str, Any]) -> dict[str, Any]:
            text, ok = result_of(await wait(thread_id, name))
            return {"content": [{"type": "text", "text": text}], **({} if ok else {"is_error": True})}
        return handle

    from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server  # a turn's: the SDK is imported by then

    definitions = [SdkMcpTool(name=t.name, description=t.description or t.name, input_schema=input_schema(t),
                              handler=handler_for(t.name)) for t in tools]
    return {SERVER: create_sdk_mcp_server(name=SERVER, tools=definitions)}


def request_for(tool_name: str, tool_input: dict[str, Any], tool_call_id: str) -> InterruptRequest:
    return frontend_request(tool_call_id, own_name(tool_name), tool_input)


class FrontendCalls:
    """The frontend calls the gate has let through, waiting for their MCP handler (which is not told the call's
    id: the calls of one tool are taken in the order Claude made them)."""

    def __init__(self) -> None:
        self._calls: dict[tuple[str, str], deque[PendingInterrupt]] = {}

    def note_call(self, thread_id: str, pending: PendingInterrupt) -> None:
        self._calls.setdefault((thread_id, pending.request.tool_name), deque()).append(pending)

    def take(self, thread_id: str, name: str) -> PendingInterrupt | None:
        calls = self._calls.get((thread_id, name))
        return calls.popleft() if calls else None
