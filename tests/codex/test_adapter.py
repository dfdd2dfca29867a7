"""The Codex adapter on recorded app-server notification streams (tests/fixtures/codex, recorded with
tests/fixtures/record_codex.py against the real app-server, docs/runners.md#versions) and on hand-written edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from events import finished, run_error, text, wire_all
from events import tool as tool_events
from openai_codex.generated.notification_registry import NOTIFICATION_MODELS
from openai_codex.models import Notification, UnknownNotification

from ag_ui_codex_sdk import CodexEventAdapter, describe_failure

FIXTURES = Path(__file__).parents[1] / "fixtures" / "codex"
USAGE_2 = {"provider": "openai", "model": "gpt-5.5", "inputTokens": 200, "outputTokens": 20, "totalTokens": 220,
           "reasoningTokens": 0, "cachedInputTokens": 0, "cacheWriteInputTokens": 0}
USAGE_1 = {**USAGE_2, "inputTokens": 100, "outputTokens": 10, "totalTokens": 110}
FINAL = ["Done: I ran the command", " and checked the result.", " All good."]


def recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()]


def translate(notifications: list[Any], client_state: Any = None) -> list[dict[str, Any]]:
    adapter = CodexEventAdapter("thread-1", "run-1", model="gpt-5.5", client_state=client_state)
    return wire_all(adapter.run(notifications), drop=["timestamp"])


def tool(call_id: str, name: str, args: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
    return tool_events(call_id, name, args, result, result_suffix=":result")  # Codex's result ids


def test_basic_tool_call() -> None:
    cwd = "/recorded/basic_tool/workspace"
    assert translate(recorded("basic_tool")) == [
        *text("msg_2", "I will run a shell command."),
        *tool("call_3", "shell", {"command": "/bin/bash -lc 'echo hello > out.txt'", "cwd": cwd},
              {"status": "completed", "exitCode": 0, "output": ""}),
        *text("msg_5", *FINAL),
        finished(USAGE_2),
    ]


def test_text_with_several_deltas() -> None:
    assert translate(recorded("text_deltas")) == [
        *text("msg_2", "Hello from the scripted model.", " No tools were needed."),
        finished(USAGE_1),
    ]


def test_reasoning_and_apply_patch() -> None:
    path = "/recorded/think_patch/workspace/hello.txt"
    changes = [{"path": path, "kind": "add"}]
    assert translate(recorded("think_patch")) == [
        {"type": "REASONING_START", "messageId": "rs_2"},
        {"type": "REASONING_MESSAGE_START", "messageId": "rs_2", "role": "reasoning"},
        *[{"type": "REASONING_MESSAGE_CONTENT", "messageId": "rs_2", "delta": d}
          for d in ["**Planning** I should", " do what was asked", " (scripted reasoning)."]],
        {"type": "REASONING_MESSAGE_END", "messageId": "rs_2"},
        {"type": "REASONING_END", "messageId": "rs_2"},
        *text("msg_3", "I will edit a file."),
        *tool("call_4", "apply_patch", {"changes": changes}, {"status": "completed", "changes": changes}),
        *text("msg_6", *FINAL),
        finished(USAGE_2),
    ]


def test_error_401_becomes_an_actionable_run_error() -> None:
    notifications = recorded("error401")
    error_params = next(n["params"] for n in notifications if n["method"] == "error")
    events = translate(notifications)
    assert events == [
        {"type": "RAW", "event": {"method": "error", "params": error_params}, "source": "codex"},
        {"type": "RUN_ERROR", "code": "AUTH_FAILED", "message": (
            "OpenAI rejected the API key (HTTP 401). Check OPENAI_API_KEY / CODEX_API_KEY (or the mounted "
            "auth.json). Details: unexpected status 401 Unauthorized: Incorrect API key provided: sk-scr***. "
            "You can find your API key at https://platform.openai.com/account/api-keys.")},
    ]


@pytest.mark.parametrize(("name", "code", "message"), [
    ("error429", "RATE_LIMITED", "OpenAI rate limit or quota reached (HTTP 429). Wait and retry, or check the plan "
                                 "and billing of the OpenAI account. Details: Quota exceeded. Check your plan and "
                                 "billing details."),
    ("error500", "PROVIDER_ERROR", "The OpenAI API returned a server error (HTTP 5xx). Retry in a moment. "
                                   "Details: We\u2019re currently experiencing high demand, which may cause "
                                   "temporary errors."),
    ("error400", "BAD_REQUEST", "The model API rejected the request (HTTP 400). Details: scripted bad request"),
])
def test_rate_limit_and_server_errors(name: str, code: str, message: str) -> None:
    events = translate(recorded(name))
    assert [e["type"] for e in events] == ["RAW", "RUN_ERROR"]
    assert events[-1] == run_error(code, message)


def test_interrupted_turn_closes_the_message_and_ends_cancelled() -> None:
    assert translate(recorded("interrupted")) == [
        *text("msg_2", "slow chunk 0. ", "slow chunk 1. "),
        finished(outcome={"type": "cancelled"}),
    ]


def typed(wire: dict[str, Any]) -> Notification:
    """The SDK's typed notification for a recorded wire dict (as ``turn.stream()`` yields it)."""
    model = NOTIFICATION_MODELS.get(wire["method"])
    payload = model.model_validate(wire["params"]) if model else UnknownNotification(params=wire["params"])
    return Notification(method=wire["method"], payload=payload)


@pytest.mark.parametrize("name", ["basic_tool", "text_deltas", "think_patch", "error401", "interrupted"])
def test_typed_sdk_notifications_decode_like_recorded_dicts(name: str) -> None:
    notifications = recorded(name)
    assert translate([typed(n) for n in notifications]) == translate(notifications)


def item(kind: str, item_id: str, **fields: Any) -> dict[str, Any]:
    return {"item": {"type": kind, "id": item_id, **fields}, "threadId": "th", "turnId": "tu"}


def completed(status: str = "completed", error: dict[str, Any] | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {"id": "tu", "items": [], "status": status}
    if error:
        turn["error"] = error
    return {"method": "turn/completed", "params": {"threadId": "th", "turn": turn}}


def test_completed_message_without_deltas_is_emitted_once() -> None:
    events = translate([
        {"method": "item/started", "params": item("agentMessage", "m1", text="")},
        {"method": "item/completed", "params": item("agentMessage", "m1", text="whole answer")},
        {"method": "item/started", "params": item("agentMessage", "m2", text="")},
        {"method": "item/agentMessage/delta", "params": {"itemId": "m2", "delta": "streamed"}},
        {"method": "item/agentMessage/delta", "params": {"itemId": "m2", "delta": ""}},
        {"method": "item/completed", "params": item("agentMessage", "m2", text="streamed")},
        completed(),
    ])
    assert events == [*text("m1", "whole answer"), *text("m2", "streamed"), finished()]


def test_plan_updates_become_snapshot_then_json_patch() -> None:
    def plan(*steps: tuple[str, str]) -> dict[str, Any]:
        return {"method": "turn/plan/updated", "params": {
            "threadId": "th", "turnId": "tu", "plan": [{"step": s, "status": st} for s, st in steps]}}

    events = translate([
        plan(("read", "in_progress"), ("edit", "pending")),
        plan(("read", "completed"), ("edit", "in_progress"), ("test", "pending")),
        plan(("read", "completed")),
        completed(),
    ])
    assert events == [
        {"type": "STATE_SNAPSHOT", "snapshot": {"plan": {"explanation": None, "steps": [
            {"step": "read", "status": "in_progress"}, {"step": "edit", "status": "pending"}]}}},
        {"type": "STATE_DELTA", "delta": [
            {"op": "replace", "path": "/plan/steps/0/status", "value": "completed"},
            {"op": "replace", "path": "/plan/steps/1/status", "value": "in_progress"},
            {"op": "add", "path": "/plan/steps/2", "value": {"step": "test", "status": "pending"}}]},
        {"type": "STATE_DELTA", "delta": [
            {"op": "remove", "path": "/plan/steps/2"}, {"op": "remove", "path": "/plan/steps/1"}]},
        finished(),
    ]


def apply_patch(state: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The RFC 6902 subset the plan uses (add / replace / remove on objects and arrays), as a client applies it."""
    state = json.loads(json.dumps(state))
    for op in ops:
        *parents, last = op["path"].strip("/").split("/")
        target: Any = state
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            index = int(last)
            if op["op"] == "add":
                target.insert(index, op["value"])
            elif op["op"] == "replace":
                target[index] = op["value"]
            else:
                del target[index]
        elif op["op"] == "remove":
            del target[last]
        else:
            target[last] = op["value"]
    return state


def test_plan_keeps_the_clients_own_state_keys() -> None:
    """A STATE_SNAPSHOT would replace the client's whole state: with an object state of its own, the plan is added
    under ``plan`` by a delta, and the client's keys survive every update."""
    def plan(*steps: tuple[str, str]) -> dict[str, Any]:
        return {"method": "turn/plan/updated", "params": {"plan": [{"step": s, "status": st} for s, st in steps]}}

    client = {"document": {"title": "draft"}, "plan": {"stale": "from an earlier run"}}
    events = translate([plan(("read", "in_progress")), plan(("read", "completed"), ("edit", "pending")),
                        completed()], client_state=client)
    assert [e["type"] for e in events] == ["STATE_DELTA", "STATE_DELTA", "RUN_FINISHED"]
    assert events[0]["delta"] == [{"op": "add", "path": "/plan", "value": {
        "explanation": None, "steps": [{"step": "read", "status": "in_progress"}]}}]
    state = client
    for event in events[:2]:
        state = apply_patch(state, event["delta"])
    assert state == {"document": {"title": "draft"}, "plan": {"explanation": None, "steps": [
        {"step": "read", "status": "completed"}, {"step": "edit", "status": "pending"}]}}


def test_mcp_and_web_search_tool_calls() -> None:
    mcp = dict(server="docs", tool="lookup", arguments={"q": "x"})
    events = translate([
        {"method": "item/started", "params": item("mcpToolCall", "c1", status="inProgress", **mcp)},
        {"method": "item/completed", "params": item("mcpToolCall", "c1", status="completed", **mcp, result={
            "content": [{"type": "text", "text": "found it"}]})},
        {"method": "item/started", "params": item("mcpToolCall", "c2", status="inProgress", **mcp)},
        {"method": "item/completed", "params": item("mcpToolCall", "c2", status="failed", **mcp,
                                                    error={"message": "server gone"})},
        {"method": "item/started", "params": item("webSearch", "w1", query="")},
        {"method": "item/completed", "params": item("webSearch", "w1", query="ag-ui protocol",
                                                    results=[{"url": "https://example.org"}])},
        completed(),
    ])
    assert events == [
        *tool("c1", "mcp__docs__lookup", {"q": "x"}, {"status": "completed", "content": "found it"}),
        *tool("c2", "mcp__docs__lookup", {"q": "x"}, {"status": "failed", "error": "server gone"}),
        {"type": "TOOL_CALL_START", "toolCallId": "w1", "toolCallName": "web_search"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "w1", "delta": json.dumps({"query": "ag-ui protocol"})},
        {"type": "TOOL_CALL_END", "toolCallId": "w1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "w1:result", "toolCallId": "w1", "role": "tool",
         "content": json.dumps({"query": "ag-ui protocol", "results": [{"url": "https://example.org"}]})},
        finished(),
    ]


def test_unknown_and_malformed_notifications_are_kept_as_raw() -> None:
    odd = {"method": "thread/somethingNew", "params": {"x": 1}}
    broken = {"method": "item/agentMessage/delta", "params": {"itemId": "m", "delta": {"not": "text"}}}
    events = translate([odd, {"method": "turn/plan/updated", "params": {"plan": "nonsense"}}, broken,
                        completed()])
    assert events[0] == {"type": "RAW", "event": odd, "source": "codex"}
    assert events[1]["type"] == "RAW"
    assert events[-1] == finished()


def test_stream_ending_without_turn_completed_closes_blocks() -> None:
    events = translate([
        {"method": "item/reasoning/summaryTextDelta", "params": {"itemId": "r", "delta": "hm", "summaryIndex": 0}},
        {"method": "item/started", "params": item("webSearch", "w", query="")},
    ])
    assert [e["type"] for e in events] == [
        "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_START",
        "REASONING_MESSAGE_END", "REASONING_END", "TOOL_CALL_ARGS", "TOOL_CALL_END"]


@pytest.mark.parametrize(("error", "code", "message"), [
    ({"message": "unexpected status 429 Too Many Requests: quota", "codexErrorInfo": "usageLimitExceeded"},
     "RATE_LIMITED", "OpenAI rate limit or quota reached (HTTP 429). Wait and retry, or check the plan and billing "
                     "of the OpenAI account. Details: unexpected status 429 Too Many Requests: quota"),
    ({"message": "We're currently experiencing high demand", "codexErrorInfo": {
        "responseTooManyFailedAttempts": {"httpStatusCode": 500}}}, "PROVIDER_ERROR",
     "The OpenAI API returned a server error (HTTP 500). Retry in a moment. Details: We're currently experiencing "
     "high demand"),
    ({"message": "stream disconnected", "codexErrorInfo": {"responseStreamDisconnected": {}}},
     "PROVIDER_UNREACHABLE", "Codex could not reach the model API (connection failed). Check the network and "
                             "OPENAI_BASE_URL. Details: stream disconnected"),
    ({"message": '{"error": {"message": "bad input", "type": "invalid_request_error"}}', "codexErrorInfo": "other"},
     "BAD_REQUEST", "The model API rejected the request (HTTP 400). Details: bad input"),
    ({"message": "weird"}, "AGENT_ERROR", "The Codex turn failed. Details: weird"),
])
def test_failure_descriptions(error: dict[str, Any], code: str, message: str) -> None:
    failure = describe_failure(error)
    assert failure.code == code and failure.message == message
    events = translate([completed("failed", error)])
    assert events == [run_error(code, message)]
