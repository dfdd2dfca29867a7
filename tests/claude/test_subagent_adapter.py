"""The Claude adapter's sub-agent segments on their own, from messages shaped as the pinned CLI sends them (seen
with the real CLI: foreground ``task_started`` with ``is_backgrounded: false``, the sub-agent's synthetic API-error
message, ``task_updated`` failed, the ``Agent`` call's error result): whole event lists compared."""

from __future__ import annotations

from typing import Any

from events import wire_all

from ag_ui_claude import translate
from ag_ui_claude.tasks import task_report

CALL = "toolu_agent_1"


def assistant(uuid: str, content: list[dict[str, Any]], parent: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "assistant", "uuid": uuid, "session_id": "s1", "parent_tool_use_id": parent,
            "message": {"id": f"msg-{uuid}", "role": "assistant", "model": "claude-x", "content": content}, **extra}


def system(subtype: str, **data: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": subtype, "session_id": "s1", "uuid": f"sys-{subtype}", **data}


def tool_result(call: str, text: str, is_error: bool, parent: str | None = None) -> dict[str, Any]:
    return {"type": "user", "uuid": f"res-{call}", "session_id": "s1", "parent_tool_use_id": parent,
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": text, "is_error": is_error}]}}


RESULT = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 5, "duration_api_ms": 4,
          "num_turns": 2, "session_id": "s1", "result": "ok", "total_cost_usd": 0.0, "stop_reason": "end_turn",
          "usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0}}


def started(backgrounded: bool) -> dict[str, Any]:
    return system("task_started", task_id="agent-7", tool_use_id=CALL, description="sub",
                  subagent_type="general-purpose", is_backgrounded=backgrounded, task_type="local_agent")


def translated(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The adapter's events for ``raw`` but the RUN_FINISHED, on the wire without timestamps."""
    return [e for e in wire_all(translate(raw), drop=["timestamp"]) if e["type"] != "RUN_FINISHED"]


def test_a_failed_foreground_sub_agent_is_a_subagent_error_not_the_runs() -> None:
    mark = {"metadata": {"parentToolCallId": CALL}, "subagentRunId": "agent-7"}
    events = translated([
        assistant("a1", [{"type": "tool_use", "id": CALL, "name": "Agent",
                          "input": {"description": "sub", "prompt": "do it", "run_in_background": False}}]),
        started(backgrounded=False),
        assistant("a2", [{"type": "tool_use", "id": "toolu_sub_1", "name": "Bash", "input": {"command": "ls"}}],
                  parent=CALL),
        tool_result("toolu_sub_1", "a.txt", False, parent=CALL),
        assistant("a3", [{"type": "text", "text": "API Error: 400 bad request"}], parent=CALL, error="unknown"),
        system("task_updated", task_id="agent-7", patch={"status": "failed", "error": "API Error: 400 bad request"}),
        system("task_notification", task_id="agent-7", tool_use_id=CALL, status="failed", summary="late",
               output_file="", usage={"total_tokens": 3, "tool_uses": 1, "duration_ms": 9}),
        tool_result(CALL, "Agent terminated early due to an API error", True),
        RESULT,
    ])
    assert events == [
        {"type": "TOOL_CALL_START", "toolCallId": CALL, "toolCallName": "Agent"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": CALL,
         "delta": '{"description": "sub", "prompt": "do it", "run_in_background": false}'},
        {"type": "TOOL_CALL_END", "toolCallId": CALL},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "agent-7", "name": "general-purpose", "description": "sub",
         "parentToolCallId": CALL},
        {"type": "TOOL_CALL_START", "toolCallId": "toolu_sub_1", "toolCallName": "Bash", **mark},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "toolu_sub_1", "delta": '{"command": "ls"}', **mark},
        {"type": "TOOL_CALL_END", "toolCallId": "toolu_sub_1", **mark},
        {"type": "TOOL_CALL_RESULT", "messageId": "toolu_sub_1-result", "toolCallId": "toolu_sub_1",
         "content": "a.txt", "role": "tool", **mark},
        {"type": "SUBAGENT_ERROR", "subagentRunId": "agent-7", "message": "API Error: 400 bad request",
         "code": "SUBAGENT_FAILED"},
        {"type": "TOOL_CALL_RESULT", "messageId": f"{CALL}-result", "toolCallId": CALL,
         "content": "Tool error: Agent terminated early due to an API error", "role": "tool"},
    ]


def test_a_backgrounded_sub_agent_is_a_task_not_a_segment() -> None:
    raw = [assistant("a1", [{"type": "tool_use", "id": CALL, "name": "Agent", "input": {"prompt": "later"}}]),
           started(backgrounded=True), tool_result(CALL, "Async agent launched successfully.", False), RESULT]
    types = [e["type"] for e in translated(raw)]
    assert types == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    report = task_report(started(backgrounded=True))
    assert report is not None and report.kind == "started" and report.task_id == "agent-7"
