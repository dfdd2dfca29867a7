"""ag_ui_claude on recorded Claude Code streams (tests/fixtures/claude, recorded by record_claude.py from the
real bundled CLI against the scripted Anthropic server): whole decoded event lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ag_ui_validate.pytest_plugin import assert_valid_agui
from claude_agent_sdk._internal.message_parser import parse_message
from events import finished, run_error, wire_all

from ag_ui_claude import ClaudeEventAdapter, translate

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude"


def lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def block_line_id(raw: list[dict[str, Any]], block_type: str, nth: int = 0) -> str:
    """uuid of the nth content_block_start line of that block type (the adapter's message id for it)."""
    starts = [r["uuid"] for r in raw if r.get("type") == "stream_event"
              and r["event"].get("type") == "content_block_start"
              and r["event"]["content_block"]["type"] == block_type]
    return starts[nth]


def result_of(raw: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in raw if r.get("type") == "result")


def finished_with(result: dict[str, Any]) -> dict[str, Any]:
    """The RUN_FINISHED the adapter makes of this recorded result message."""
    usage = result["usage"]
    total_in = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    return finished({"provider": "anthropic", "model": "claude-opus-5-5", "inputTokens": total_in,
                     "outputTokens": usage["output_tokens"], "totalTokens": total_in + usage["output_tokens"],
                     "cachedInputTokens": 0, "cacheWriteInputTokens": 0},
                    thread_id="thread", run_id="run",
                    result={"costUsd": result["total_cost_usd"], "durationMs": result["duration_ms"],
                            "durationApiMs": result["duration_api_ms"], "numTurns": result["num_turns"],
                            "sessionId": result["session_id"], "stopReason": result["stop_reason"]})


def with_run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "RUN_STARTED", "threadId": "thread", "runId": "run"}, *events]


def test_tool_call_stream() -> None:
    raw = lines("tool_call.jsonl")
    first, final = block_line_id(raw, "text", 0), block_line_id(raw, "text", 1)
    events = wire_all(translate(raw))
    assert events == [
        {"type": "TEXT_MESSAGE_START", "messageId": first, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": first, "delta": "I will run a shell command."},
        {"type": "TEXT_MESSAGE_END", "messageId": first},
        {"type": "TOOL_CALL_START", "toolCallId": "toolu_scripted_1", "toolCallName": "Bash"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "toolu_scripted_1",
         "delta": '{"command": "echo hello > out.txt", "de'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "toolu_scripted_1",
         "delta": 'scription": "run the scripted command"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "toolu_scripted_1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "toolu_scripted_1-result", "toolCallId": "toolu_scripted_1",
         "content": "(Bash completed with no output)", "role": "tool"},
        {"type": "TEXT_MESSAGE_START", "messageId": final, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": final, "delta": "Done: I ran the command"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": final, "delta": " and checked the result."},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": final, "delta": " All good."},
        {"type": "TEXT_MESSAGE_END", "messageId": final},
        finished_with(result_of(raw)),
    ]
    assert_valid_agui(with_run(events), max_warnings=0, severity_overrides={"AGUI902": "off"})


def test_partial_text_is_emitted_once() -> None:
    raw = lines("partial_text.jsonl")
    assert any(r["type"] == "assistant" for r in raw)  # the complete message repeats the streamed text
    text = block_line_id(raw, "text")
    assert wire_all(translate(raw)) == [
        {"type": "TEXT_MESSAGE_START", "messageId": text, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": text, "delta": "Hello from the scripted model."},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": text, "delta": " No tools were needed."},
        {"type": "TEXT_MESSAGE_END", "messageId": text},
        finished_with(result_of(raw)),
    ]


def test_thinking_becomes_reasoning() -> None:
    raw = lines("thinking.jsonl")
    think, text = block_line_id(raw, "thinking"), block_line_id(raw, "text")
    events = wire_all(translate(raw))
    assert events == [
        {"type": "REASONING_START", "messageId": think},
        {"type": "REASONING_MESSAGE_START", "messageId": think, "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": think, "delta": "Let me think about this."},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": think, "delta": " The user wants a short answer."},
        {"type": "REASONING_MESSAGE_END", "messageId": think},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": think,
         "encryptedValue": "scripted-signature-1"},
        {"type": "REASONING_END", "messageId": think},
        {"type": "TEXT_MESSAGE_START", "messageId": text, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": text, "delta": "Hello from the scripted model."},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": text, "delta": " No tools were needed."},
        {"type": "TEXT_MESSAGE_END", "messageId": text},
        finished_with(result_of(raw)),
    ]
    assert_valid_agui(with_run(events), max_warnings=0, severity_overrides={"AGUI902": "off"})


def test_error_401_is_a_run_error_naming_the_key() -> None:
    events = wire_all(translate(lines("error401.jsonl")))
    assert events == [{
        "type": "RUN_ERROR", "code": "AUTH_FAILED",
        "message": "Anthropic rejected the API key (HTTP 401). Check ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN,"
                   " ANTHROPIC_AUTH_TOKEN, or the Vertex credentials) configured for this session. Claude Code said:"
                   " Failed to authenticate. API Error: 401 scripted error 401"}]


def test_error_429_is_a_rate_limit_error() -> None:
    events = wire_all(translate(lines("error429.jsonl")))
    assert [e["type"] for e in events] == ["RUN_ERROR"]
    assert events[0]["code"] == "RATE_LIMITED"
    assert events[0]["message"].startswith("The Anthropic API rate limit was reached (HTTP 429).")
    assert events == [run_error("RATE_LIMITED", "The Anthropic API rate limit was reached (HTTP 429). Wait a minute"
                                " and try again, or use a key with a higher limit. Claude Code said: API Error: "
                                "Request rejected (429) · scripted error 429")]


def test_interrupted_turn_ends_without_terminal_event() -> None:
    raw = lines("interrupt.jsonl")
    result = result_of(raw)
    assert result["subtype"] == "error_during_execution" and result["is_error"] is True
    adapter = ClaudeEventAdapter("thread", "run")
    events = wire_all([e for item in raw for e in adapter.feed(item)] + adapter.finish())
    text = block_line_id(raw, "text")
    assert events == [
        {"type": "TEXT_MESSAGE_START", "messageId": text, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": text, "delta": "slow chunk 0. "},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": text, "delta": "slow chunk 1. "},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": text, "delta": "slow chunk 2. "},
        {"type": "TEXT_MESSAGE_END", "messageId": text},
    ]
    assert adapter.interrupted and adapter.terminal is None


def test_typed_sdk_messages_give_the_same_events_as_raw_dicts() -> None:
    for path in sorted(FIXTURES.glob("*.jsonl")):  # raw stream_event lines take their own path in feed()
        raw = lines(path.name)
        typed = [m for m in (parse_message(r) for r in raw) if m is not None]
        assert wire_all(translate(typed)) == wire_all(translate(raw)), path.name


def test_session_id_is_reported_from_init() -> None:
    raw = lines("partial_text.jsonl")
    seen: list[str] = []
    adapter = ClaudeEventAdapter("thread", "run", on_session_id=seen.append)
    for item in raw:
        adapter.feed(item)
    assert seen == [raw[0]["session_id"]] and adapter.session_id == raw[0]["session_id"]


def test_unknown_and_malformed_messages_are_kept_as_raw() -> None:
    unknown = {"type": "brand_new_kind", "payload": 1}
    broken_result = {"type": "result", "subtype": "success"}  # required fields missing
    events = wire_all(translate([unknown, broken_result, "not json at all"]))
    assert events == [
        {"type": "RAW", "event": unknown, "source": "claude"},
        {"type": "RAW", "event": broken_result, "source": "claude"},
        {"type": "RAW", "event": {"line": "not json at all"}, "source": "claude"},
    ]


def test_tool_error_and_subagent_attribution() -> None:
    """A sub-agent's (parent_tool_use_id) complete messages carry the Task call id; errors are visible."""
    task = {"type": "assistant", "uuid": "a1", "session_id": "s", "parent_tool_use_id": None,
            "message": {"id": "msg_1", "model": "m", "role": "assistant",
                        "content": [{"type": "tool_use", "id": "toolu_task", "name": "Task",
                                     "input": {"prompt": "look"}}]}}
    sub = {"type": "assistant", "uuid": "a2", "session_id": "s", "parent_tool_use_id": "toolu_task",
           "message": {"id": "msg_2", "model": "m", "role": "assistant",
                       "content": [{"type": "tool_use", "id": "toolu_sub", "name": "Bash",
                                    "input": {"command": "false"}}]}}
    sub_result = {"type": "user", "session_id": "s", "parent_tool_use_id": "toolu_task",
                  "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_sub",
                                                           "content": "Exit code 1", "is_error": True}]}}
    meta = {"parentToolCallId": "toolu_task"}
    events = wire_all(translate([task, sub, sub_result]))
    assert events == [
        {"type": "TOOL_CALL_START", "toolCallId": "toolu_task", "toolCallName": "Task"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "toolu_task", "delta": '{"prompt": "look"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "toolu_task"},
        {"type": "TOOL_CALL_START", "toolCallId": "toolu_sub", "toolCallName": "Bash", "metadata": meta},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "toolu_sub", "delta": '{"command": "false"}', "metadata": meta},
        {"type": "TOOL_CALL_END", "toolCallId": "toolu_sub", "metadata": meta},
        {"type": "TOOL_CALL_RESULT", "messageId": "toolu_sub-result", "toolCallId": "toolu_sub",
         "content": "Tool error: Exit code 1", "role": "tool", "metadata": meta},
    ]
