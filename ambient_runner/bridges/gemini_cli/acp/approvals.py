"""Gemini's ``session/request_permission`` as interrupts: the session mode of a policy, what a request asks, and
the reply an answer sends back.

Under ``auto`` a session runs in mode ``yolo`` (nothing asks), under ``ask`` in ``default`` (every tool that changes
something asks), in plan mode ``plan`` (read-only tools only). Approve = ``proceed_once``, refuse = ``cancel`` (the
turn goes on and the model learns the call was refused; the person's words follow with the next prompt), a refusal
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


def session_mode(policy: str, plan: bool) -> str:
    if plan:
        return "plan"
    return "default" if policy == "ask" else "yolo"


def approval_request(params: RequestPermissionParams) -> InterruptRequest:
    call = params.tool_call
    call_id = call.tool_call_id
    name = tool_name(call_id)
    title = call.title or name
    what = {"execute": "run a command", "edit": "change a file", "delete": "delete a file",
            "move": "move a file", "fetch": "fetch a web page"}.get(str(call.kind), f"use {name}")
    return InterruptRequest(reason="tool_approval", tool_call_id=call_id, tool_name=name,
                            message=f"Gemini wants to {what}:\n{title}", arguments=tool_arguments(call))


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
