"""The app-server's approval requests as interrupts: which ask, what they say, what an answer sends back.

Under the ``ask`` policy a turn runs with Codex's ``untrusted`` approval policy (everything but its known-safe
read-only commands asks); under ``auto`` with ``never``, so nothing asks. A request that still arrives under ``auto``
(a server that asks anyway) is accepted, as the SDK itself would. A refusal is ``decline`` (the turn goes on and
the model learns it was rejected; the person's words follow as the next user input), a refusal that stops the turn
(timeout, interrupt) is ``cancel``. A frontend tool (``RunAgentInput.tools``, declared as dynamic tools when the
Codex thread starts) is called by ``item/tool/call``, under every policy; its result is the application's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ag_ui.core import Tool

from ambient_runner.bridges.frontend_tools import frontend_request, input_schema, result_of
from ambient_runner.interrupts.book import Answer, InterruptRequest, PendingInterrupt, question_request

COMMAND = "item/commandExecution/requestApproval"
FILE_CHANGE = "item/fileChange/requestApproval"
APPROVALS = (COMMAND, FILE_CHANGE)
TOOL_CALL = "item/tool/call"  # a frontend tool (declared as a dynamic tool at the thread's start)
USER_INPUT = "item/tool/requestUserInput"  # the model's questions (Codex offers the tool in its plan mode)
ELICITATION = "mcpServer/elicitation/request"  # an MCP tool call to approve (its server: approval mode "writes")
MCP_PREFIX = "mcp__"


def codex_thread_of(params: dict[str, Any]) -> str:
    return str(params.get("threadId") or "")


def request_for(method: str, params: dict[str, Any], policy: str) -> InterruptRequest | None:
    """The interrupt a server request becomes, or None when it is answered at once (``auto_answer``)."""
    if method == TOOL_CALL:  # under every policy: the application answers it
        arguments = params.get("arguments")
        return frontend_request(str(params.get("callId") or ""), str(params.get("tool") or "tool"),
                                arguments if isinstance(arguments, dict) else {"arguments": arguments})
    if method == USER_INPUT:  # under every policy
        return question_request(params.get("questions") or (), str(params.get("itemId") or ""),
                                "request_user_input", {})
    if method == ELICITATION:
        meta = found if isinstance(found := params.get("_meta"), dict) else {}
        if meta.get("codex_approval_kind") != "mcp_tool_call" or policy != "ask":
            return None
        # The request names no item: its call is found among the turn's open MCP calls (``bind_mcp_calls``).
        arguments = found if isinstance(found := meta.get("tool_params"), dict) else {}
        return InterruptRequest(reason="tool_approval", tool_call_id="",
                                tool_name=f"{MCP_PREFIX}{params.get('serverName', '')}__",
                                message=str(params.get("message") or "Codex wants to use an MCP tool"),
                                arguments=arguments)
    if method not in APPROVALS or policy != "ask":
        return None
    item_id = str(params.get("itemId") or params.get("approvalId") or "")
    if method == COMMAND:
        command = str(params.get("command") or "")
        why = f" ({params['reason']})" if params.get("reason") else ""
        return InterruptRequest(reason="tool_approval", tool_call_id=item_id, tool_name="commandExecution",
                                message=f"Codex wants to run a command{why}:\n{command}",
                                arguments={"command": command, "cwd": params.get("cwd")})
    why = f": {params['reason']}" if params.get("reason") else ""
    return InterruptRequest(reason="tool_approval", tool_call_id=item_id, tool_name="fileChange",
                            message=f"Codex wants to change files{why}",
                            arguments={"grantRoot": params.get("grantRoot")})


def dynamic_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """A run's frontend tools as the dynamic tools of a new Codex thread."""
    return [{"type": "function", "name": t.name, "description": t.description or t.name,
             "inputSchema": input_schema(t)} for t in tools]


def auto_answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The answer when nobody is asked: approvals accepted (as the SDK would), an MCP tool call allowed, any other
    elicitation (an MCP server asking for information) declined."""
    if method in APPROVALS:
        return {"decision": "accept"}
    if method == ELICITATION:
        meta = found if isinstance(found := params.get("_meta"), dict) else {}
        approving = meta.get("codex_approval_kind") == "mcp_tool_call"
        return {"action": "accept", "content": {}} if approving else {"action": "decline"}
    return {}


def bind_mcp_calls(pending: Sequence[PendingInterrupt], adapter: Any) -> None:
    """Give each waiting MCP approval its tool call: the turn's oldest open call of that server not yet bound."""
    bound = {p.request.tool_call_id for p in pending if p.request.tool_call_id}
    for waiting in pending:
        request = waiting.request
        if request.tool_call_id or not request.tool_name.startswith(MCP_PREFIX):
            continue
        call = next((c for c, name in adapter.open_calls() if name.startswith(request.tool_name) and c not in bound),
                    None)
        if call is not None:
            waiting.request = replace(request, tool_call_id=call, tool_name=adapter.tool_name_of(call))
            bound.add(call)


def decision(answer: Answer, method: str = COMMAND, questions: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The reply to a request: an approval's decision, a frontend tool's result, or the answers to ``questions``."""
    if method == USER_INPUT:  # answers by question id; a refusal answers nothing
        given = (answer.payload or {}).get("answers", {}) if answer.approved else {}
        return {"answers": {str(q.get("id")): {"answers": [given[q["question"]]]}
                            for q in questions if q.get("question") in given}}
    if method == ELICITATION:
        return {"action": "accept", "content": {}} if answer.approved else {
            "action": "cancel" if answer.stop_turn else "decline"}
    if method == TOOL_CALL:
        text, ok = result_of(answer)
        return {"contentItems": [{"type": "inputText", "text": text}], "success": ok}
    if answer.approved:
        return {"decision": "accept"}
    return {"decision": "cancel" if answer.stop_turn else "decline"}
