"""The app-server's approval requests as interrupts: which ask, what they say, what an answer sends back.

Under the ``ask`` policy a turn runs with Codex's ``untrusted`` approval policy (everything but its known-safe
read-only commands asks); under ``auto`` with ``never``, so nothing asks. A request that still arrives under ``auto``
(a server that asks anyway) is accepted, as the SDK itself would. A refusal is ``decline`` (the turn goes on and
the model learns it was rejected; the person's words follow as the next user input), a refusal that stops the turn
(timeout, interrupt) is ``cancel``.
"""

from __future__ import annotations

from typing import Any

from ambient_runner.runs.interrupts import Answer, InterruptRequest

COMMAND = "item/commandExecution/requestApproval"
FILE_CHANGE = "item/fileChange/requestApproval"
APPROVALS = (COMMAND, FILE_CHANGE)


def codex_thread_of(params: dict[str, Any]) -> str:
    return str(params.get("threadId") or "")


def request_for(method: str, params: dict[str, Any], policy: str) -> InterruptRequest | None:
    """The interrupt a server request becomes, or None when it is answered at once (``auto_answer``)."""
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


def auto_answer(method: str) -> dict[str, Any]:
    return {"decision": "accept"} if method in APPROVALS else {}


def decision(answer: Answer) -> dict[str, Any]:
    if answer.approved:
        return {"decision": "accept"}
    return {"decision": "cancel" if answer.stop_turn else "decline"}


def refusal_note(answer: Answer) -> str | None:
    """What the model is told after a plain refusal with the person's words (sent as the next user input)."""
    if answer.approved or answer.stop_turn or not answer.message:
        return None
    return f"I refused that request. {answer.message}"
