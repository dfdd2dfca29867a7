"""An ACP agent's ``session/request_permission`` as interrupts: what a request asks, and the reply an answer sends
back (how a policy maps to an agent's modes or settings is its preset's).

Approve = ``proceed_once``, refuse = ``cancel`` (the turn goes on and the model learns the call was refused; the
person's words follow with the next prompt), a refusal
that stops the turn (timeout, interrupt, a new message) = the ``cancelled`` outcome, with ``session/cancel``. The
"allow for this session" options are never chosen on a person's behalf.
"""

from __future__ import annotations

from ag_ui_gemini_cli.acp import tool_arguments, tool_name
from ag_ui_gemini_cli.acp_schema import (
    CancelledOutcome,
    RequestPermissionParams,
    RequestPermissionResponse,
    SelectedOutcome,
)
from ambient_runner.interrupts.book import Answer, InterruptRequest

CANCELLED = RequestPermissionResponse(outcome=CancelledOutcome())
REFUSED_RESULT = "The person refused this call, so it did not run."


def approval_request(params: RequestPermissionParams, who: str = "The agent", name: str | None = None
                     ) -> InterruptRequest:
    """The interrupt of a permission request; ``name``: the tool's as the stream names it (default: ACP's id
    prefix, Gemini's naming)."""
    call = params.tool_call
    call_id = call.tool_call_id
    name = name or tool_name(call_id)
    title = call.title or name
    what = {"execute": "run a command", "edit": "change a file", "delete": "delete a file",
            "move": "move a file", "fetch": "fetch a web page"}.get(str(call.kind), f"use {name}")
    return InterruptRequest(reason="tool_approval", tool_call_id=call_id, tool_name=name,
                            message=f"{who} wants to {what}:\n{title}", arguments=tool_arguments(call))


def _option(params: RequestPermissionParams, kind: str, fallback: str) -> str:
    for option in params.options:
        if option.kind == kind and option.option_id:
            return option.option_id
    return fallback


def _selected(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=SelectedOutcome(option_id=option_id))


def reply(answer: Answer, params: RequestPermissionParams) -> RequestPermissionResponse:
    """The answer to one permission request (only ever the once-options)."""
    if answer.approved:
        return _selected(_option(params, "allow_once", "proceed_once"))
    if answer.stop_turn:
        return CANCELLED
    return _selected(_option(params, "reject_once", "cancel"))


def auto_reply(params: RequestPermissionParams) -> RequestPermissionResponse:
    """A request under ``auto`` (the session's mode did not stop it from asking): allowed once."""
    return reply(Answer(approved=True), params)
