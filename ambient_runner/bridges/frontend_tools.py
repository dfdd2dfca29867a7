"""The application's own tools (``RunAgentInput.tools``): what every bridge that offers them to its CLI shares.

A call of one is a ``frontend_tool`` pending in the interrupt book: the run ends with ``pendingToolCallIds`` and
the thread's next run brings the result as a ``role: "tool"`` message (``interrupts.answers``). How a CLI is offered the
tools and told the result is its bridge's (Claude: an in-process MCP server; Codex: dynamic tools).
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import Tool

from ambient_runner.interrupts.book import Answer, InterruptRequest

NO_RESULT = "The application did not return a result for this tool call."


def input_schema(tool: Tool) -> dict[str, Any]:
    """The tool's JSON Schema for its arguments (an object with no properties when it declares none)."""
    return tool.parameters if isinstance(tool.parameters, dict) and tool.parameters else {
        "type": "object", "properties": {}}


def frontend_request(tool_call_id: str, name: str, arguments: dict[str, Any]) -> InterruptRequest:
    """A call of the application's tool ``name``, waiting for its result."""
    return InterruptRequest(reason="frontend_tool", tool_call_id=tool_call_id, tool_name=name,
                            message=f"the application's tool {name}", response_schema={}, arguments=arguments)


def result_of(answer: Answer) -> tuple[str, bool]:
    """What the call returns to the model, and whether it succeeded (a refusal: its words, or ``NO_RESULT``)."""
    if not answer.approved:
        return answer.message or NO_RESULT, False
    payload = answer.payload
    return (payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)), True
