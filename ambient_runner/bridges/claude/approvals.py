"""Claude Code's permission requests (``can_use_tool``) as interrupts: what asks, what it says, what an answer does.

Claude Code runs in its ``default`` permission mode with this callback, so every request its own rules would put to
a person reaches the runner (its read-only commands never do). Under the ``auto`` policy each is allowed at once,
except ``AskUserQuestion``, which is always a question for the person; under ``ask`` everything but the read-only
tools waits for an answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ambient_runner.interrupts.book import Answer, InterruptRequest, question_request

if TYPE_CHECKING:
    from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

QUESTION_TOOL = "AskUserQuestion"
# Tools that only read or plan: never put to a person.
READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead", "WebSearch", "WebFetch", "TodoWrite",
                             "TodoRead", "BashOutput", "TaskOutput", "Task", "Agent", "ExitPlanMode",
                             "ListMcpResourcesTool", "ReadMcpResourceTool"})
REFUSED = "The person refused this tool call."
UNANSWERED = "The person did not answer the question."


def request_for(tool_name: str, tool_input: Mapping[str, Any], tool_call_id: str, policy: str
                ) -> InterruptRequest | None:
    """The interrupt a permission request becomes, or None when it is allowed without asking."""
    if tool_name == QUESTION_TOOL:
        return _question(tool_input, tool_call_id)
    if policy != "ask" or tool_name in READ_ONLY_TOOLS:
        return None
    return InterruptRequest(reason="tool_approval", tool_call_id=tool_call_id, tool_name=tool_name,
                            message=_describe(tool_name, tool_input), arguments=dict(tool_input))


def permission(answer: Answer, request: InterruptRequest, tool_input: Mapping[str, Any]
               ) -> PermissionResultAllow | PermissionResultDeny:
    from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny  # a turn's: imported by then

    if answer.approved and request.reason == "question":
        answers = (answer.payload or {}).get("answers", {})
        return PermissionResultAllow(updated_input={**tool_input, "answers": answers})
    if answer.approved:
        return PermissionResultAllow(updated_input=dict(tool_input))
    default = UNANSWERED if request.reason == "question" else REFUSED
    message = f"{default} They said: {answer.message}" if answer.message else default
    return PermissionResultDeny(message=message, interrupt=answer.stop_turn)


def _describe(tool_name: str, tool_input: Mapping[str, Any]) -> str:
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    if tool_name == "Bash" and tool_input.get("command"):
        why = f" ({tool_input['description']})" if tool_input.get("description") else ""
        return f"Claude wants to run a command{why}:\n{tool_input['command']}"
    if tool_name in ("Write", "Edit", "MultiEdit", "NotebookEdit") and path:
        verb = "write" if tool_name == "Write" else "edit"
        return f"Claude wants to {verb} {path}"
    if tool_name.startswith("mcp__"):
        _, server, *tool = tool_name.split("__")
        return f"Claude wants to use the MCP tool {'__'.join(tool) or tool_name} of server {server}:\n" \
               f"{json.dumps(dict(tool_input), ensure_ascii=False)[:2000]}"
    return f"Claude wants to use {tool_name}:\n{json.dumps(dict(tool_input), ensure_ascii=False)[:2000]}"


def _question(tool_input: Mapping[str, Any], tool_call_id: str) -> InterruptRequest:
    return question_request(tool_input.get("questions") or (), tool_call_id, QUESTION_TOOL, dict(tool_input))
