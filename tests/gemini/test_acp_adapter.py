"""The Gemini ACP adapter on the messages ``gemini --acp`` 0.61 sends (shapes as recorded in
../shared/research/gemini-acp-and-approvals.md §1.4-1.6): whole decoded event lists."""

from __future__ import annotations

import json
from typing import Any

from events import wire

from ag_ui_gemini_cli import GeminiAcpAdapter
from ag_ui_gemini_cli.acp import tool_arguments, tool_name
from ag_ui_gemini_cli.acp_schema import UPDATE, JsonRpcError, PromptResult, ToolCall

SHELL = "run_shell_command__run_shell_command_1796109900359_0"
CWD_NOTE = {"type": "content", "content": {"type": "text", "text": "[current working directory /w] (scripted)"}}
QUOTA = {"_meta": {"quota": {"token_count": {"input_tokens": 200, "output_tokens": 30},
                             "model_usage": [{"model": "gemini-2.5-flash",
                                              "token_count": {"input_tokens": 200, "output_tokens": 30}}]}}}


def chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def feed(adapter: GeminiAcpAdapter, *updates: dict[str, Any]) -> list[dict[str, Any]]:
    return [wire(e) for update in updates for e in adapter.feed(UPDATE.validate_python(update))]


def test_thought_text_tool_and_usage() -> None:
    adapter = GeminiAcpAdapter("t", "r", model="gemini-2.5-flash")
    events = feed(adapter,
                  {"sessionUpdate": "available_commands_update", "availableCommands": []},
                  chunk("agent_thought_chunk", "**Planning the command**\nI should run a shell command."),
                  chunk("agent_thought_chunk", "****\nA part without a subject."),
                  chunk("agent_message_chunk", "I will run a shell command."),
                  {"sessionUpdate": "tool_call", "toolCallId": SHELL, "status": "in_progress",
                   "title": "echo hello > out.txt", "content": [CWD_NOTE], "locations": [], "kind": "execute"},
                  {"sessionUpdate": "tool_call_update", "toolCallId": SHELL, "status": "completed",
                   "title": "echo hello > out.txt", "content": [], "locations": [], "kind": "execute"},
                  chunk("agent_message_chunk", "[MODE_UPDATE] autoEdit"),
                  chunk("agent_message_chunk", "Done."))
    events += [wire(e) for e in adapter.end(PromptResult.model_validate({"stopReason": "end_turn", **QUOTA}))]

    def reasoning(n: int, text: str) -> list[dict[str, Any]]:
        rid = f"reasoning-r-{n}"
        return [{"type": "REASONING_START", "messageId": rid},
                {"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"},
                {"type": "REASONING_MESSAGE_CONTENT", "messageId": rid, "delta": text},
                {"type": "REASONING_MESSAGE_END", "messageId": rid}, {"type": "REASONING_END", "messageId": rid}]

    assert events == [
        *reasoning(1, "**Planning the command**\nI should run a shell command."),
        *reasoning(2, "A part without a subject."),
        {"type": "TEXT_MESSAGE_START", "messageId": "msg-r-3", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-r-3", "delta": "I will run a shell command."},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg-r-3"},
        {"type": "TOOL_CALL_START", "toolCallId": SHELL, "toolCallName": "run_shell_command",
         "parentMessageId": "msg-r-3"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": SHELL, "delta": json.dumps({"command": "echo hello > out.txt"})},
        {"type": "TOOL_CALL_END", "toolCallId": SHELL},
        {"type": "TOOL_CALL_RESULT", "messageId": f"{SHELL}-result", "toolCallId": SHELL, "content": "",
         "role": "tool"},
        {"type": "TEXT_MESSAGE_START", "messageId": "msg-r-4", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-r-4", "delta": "Done."},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg-r-4"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [
            {"provider": "google", "model": "gemini-2.5-flash", "inputTokens": 200, "outputTokens": 30,
             "totalTokens": 230}]},
    ]


def test_a_permission_request_starts_the_call_and_a_refusal_closes_it() -> None:
    adapter = GeminiAcpAdapter("t", "r")
    write = {"toolCallId": "write_file__write_file_1_0", "status": "pending", "title": "Writing to notes.txt",
             "kind": "edit", "content": [{"type": "diff", "path": "/w/notes.txt", "oldText": "",
                                          "newText": "hello notes\n", "_meta": {"kind": "add"}}]}
    events = [wire(e) for e in adapter.permission(ToolCall.model_validate(write))]
    events += [wire(e) for e in adapter.refused(write["toolCallId"], "not now")]
    events += feed(adapter, {"sessionUpdate": "tool_call_update", "toolCallId": write["toolCallId"],
                             "status": "completed", "content": []})  # nothing after a refusal: ignored
    assert events == [
        {"type": "TOOL_CALL_START", "toolCallId": "write_file__write_file_1_0", "toolCallName": "write_file"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "write_file__write_file_1_0",
         "delta": json.dumps({"path": "/w/notes.txt", "oldText": "", "newText": "hello notes\n"})},
        {"type": "TOOL_CALL_END", "toolCallId": "write_file__write_file_1_0"},
        {"type": "TOOL_CALL_RESULT", "messageId": "write_file__write_file_1_0-result",
         "toolCallId": "write_file__write_file_1_0", "content": "not now", "role": "tool"},
    ]


def test_a_lone_failed_update_is_a_whole_failed_call() -> None:
    events = feed(GeminiAcpAdapter("t", "r"), {
        "sessionUpdate": "tool_call_update", "toolCallId": "read_file__read_file_2_0", "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": "Path is outside the workspace"}}]})
    assert [e["type"] for e in events] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert events[0]["toolCallName"] == "read_file" and events[1]["delta"] == "{}"
    assert events[-1]["content"] == "Error: Path is outside the workspace"


def test_mcp_arguments_and_names() -> None:
    call = {"toolCallId": "mcp_echo_say__mcp_echo_say_3_0", "title": "say (echo MCP Server)", "kind": "other",
            "content": [{"type": "content", "content": {"type": "text", "text": '{"text":"hello"}'}}]}
    assert tool_name(call["toolCallId"]) == "mcp_echo_say"
    assert tool_arguments(ToolCall.model_validate(call)) == {"text": "hello"}
    assert tool_name("no-separator") == "tool"


def test_errors_and_ends() -> None:
    def end(result: dict[str, Any] | None = None, error: dict[str, Any] | None = None,
            answered: bool = False) -> dict[str, Any] | None:
        adapter = GeminiAcpAdapter("t", "r")
        if answered:
            feed(adapter, chunk("agent_message_chunk", "partial "))
        events = (adapter.fail(JsonRpcError.model_validate(error)) if error is not None
                  else adapter.end(PromptResult.model_validate(result or {})))
        return wire(events[-1]) if events and events[-1].type in ("RUN_ERROR", "RUN_FINISHED") else None

    body = '{"error":{"code":401,"message":"API key not valid. (scripted)","status":"UNAUTHENTICATED"}}'
    assert end(error={"code": 401, "message": body})["code"] == "AUTH_FAILED"
    assert end(error={"code": 429, "message": "Resource has been exhausted (e.g. check quota)."})["code"] == (
        "RATE_LIMITED")
    assert end(error={"code": 500, "message": "{}"})["code"] == "PROVIDER_ERROR"
    assert end(error={"code": -32602, "message": "Session not found: x"})["code"] == "AGENT_ERROR"
    assert end({"stopReason": "cancelled"}) is None  # the core ends a cancelled run
    assert end({"stopReason": "max_tokens"})["code"] == "CONTEXT_WINDOW_EXCEEDED"
    assert end({"stopReason": "max_turn_requests"})["code"] == "TURN_LIMIT"
    cut = {"stopReason": "end_turn", "_meta": {"quota": {"token_count": {"input_tokens": 0, "output_tokens": 0},
                                                         "model_usage": []}}}
    assert end(cut, answered=True)["code"] == "PROVIDER_ERROR"  # the stream broke off: not a success
    assert end(cut)["type"] == "RUN_FINISHED"  # nothing was answered (a slash command): no model call to miss


def test_one_terminal_event_and_nothing_after_it() -> None:
    adapter = GeminiAcpAdapter("t", "r")
    feed(adapter, chunk("agent_message_chunk", "partial "))
    ended = adapter.end(PromptResult(stop_reason="max_turn_requests"))
    assert [e.type for e in ended] == ["TEXT_MESSAGE_END", "RUN_ERROR"] and adapter.terminal is ended[-1]
    assert feed(adapter, chunk("agent_message_chunk", "late")) == []


def test_unknown_and_unfit_updates_are_raw_and_quiet_ones_nothing() -> None:
    events = feed(GeminiAcpAdapter("t", "r"),
                  {"sessionUpdate": "available_commands_update", "availableCommands": []},
                  {"sessionUpdate": "a_later_kind", "value": 1},
                  {"sessionUpdate": "agent_message_chunk", "content": "not an object"})
    assert [(e["type"], e["event"], e["source"], e["metadata"]) for e in events] == [
        ("RAW", {"sessionUpdate": "a_later_kind", "value": 1}, "gemini-cli", {"reason": "unknown_update"}),
        ("RAW", {"sessionUpdate": "agent_message_chunk", "content": "not an object"}, "gemini-cli",
         {"reason": "malformed_update"})]
