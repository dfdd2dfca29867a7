"""The Gemini CLI adapter on real recorded streams (tests/fixtures/gemini, see record_gemini.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from events import finished, text, tool, wire

from ag_ui_cli_common import Exit
from ag_ui_gemini_cli import GeminiCliAdapter
from tests.gemini.helpers import FIXTURES

TOOL_ID = re.compile(r"(run_shell_command|read_file)__\1_\d+_\d+")
TMP_DIR = re.compile(r"/tmp/record-gemini-[\w]+")
CREDENTIALS = ("Check GEMINI_API_KEY / GOOGLE_API_KEY, or the Vertex AI settings (GOOGLE_CLOUD_PROJECT, "
               "GOOGLE_APPLICATION_CREDENTIALS), or the mounted login credentials.")


def normalise(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop timestamps; CLI tool ids (which hold a clock value) and temp dirs become stable names."""
    text = json.dumps([{k: v for k, v in e.items() if k != "timestamp"} for e in events])
    ids: dict[str, str] = {}
    text = TOOL_ID.sub(lambda m: ids.setdefault(m.group(0), f"{m.group(1)}-{len(ids) + 1}"), text)
    return json.loads(TMP_DIR.sub("<tmp>", text))


def replay(name: str, *, finish: bool = True) -> list[dict[str, Any]]:
    meta = json.loads((FIXTURES / f"{name}.meta.json").read_text())
    adapter = GeminiCliAdapter("thread-1", "run-1")
    events = []
    for line in (FIXTURES / f"{name}.stdout.jsonl").read_text().splitlines():
        events += adapter.feed(line)
    if finish:
        events += adapter.finish(Exit(meta["exit_code"]))
    return normalise([wire(e) for e in events])


def usage(input_tokens: int, output_tokens: int) -> list[dict[str, Any]]:
    return [{"provider": "google", "model": "gemini-2.5-flash", "inputTokens": input_tokens,
             "outputTokens": output_tokens, "totalTokens": input_tokens + output_tokens, "cachedInputTokens": 0}]


FINAL = ("Done: I ran the command", " and checked the result.", " All good.")
PLAIN = ("Hello from the scripted model.", " No tools were needed.")


def test_tool_call_then_answer() -> None:
    assert replay("basic_tool") == [
        *text("msg-run-1-1", "I will run a shell command."),
        *tool("run_shell_command-1", "run_shell_command",
              {"command": "echo hello > out.txt", "description": "scripted shell command"}, "",
              parentMessageId="msg-run-1-1"),
        *text("msg-run-1-2", *FINAL),
        finished(*usage(200, 25)),
    ]


def test_plain_answer() -> None:
    assert replay("plain") == [
        *text("msg-run-1-1", *PLAIN),
        finished(*usage(100, 10)),
    ]


def test_resumed_turn_keeps_the_session_id() -> None:
    lines = (FIXTURES / "resume.stdout.jsonl").read_text().splitlines()
    adapter = GeminiCliAdapter("thread-1", "run-1")
    for line in lines:
        adapter.feed(line)
    assert adapter.session_id == json.loads(lines[0])["session_id"]
    assert replay("resume") == [
        *text("msg-run-1-1", *PLAIN),
        finished(*usage(100, 10)),
    ]


def test_failed_tool_is_visible_as_failed() -> None:
    reason = ('Path not in workspace: Attempted path "/nonexistent/ambient-runner-toolfail.txt" resolves outside '
              "the allowed workspace directories: <tmp>/workspace or the project temp directory: "
              "<tmp>/state/.gemini/tmp/workspace")
    assert replay("tool_failed") == [
        *text("msg-run-1-1", "I will run a shell command."),
        *tool("read_file-1", "read_file", {"file_path": "/nonexistent/ambient-runner-toolfail.txt"},
              f"Error: {reason}", parentMessageId="msg-run-1-1"),
        *text("msg-run-1-2", *FINAL),
        finished(*usage(200, 25)),
    ]


def test_zero_output_tokens_are_estimated_and_marked() -> None:
    answer_chars = len("".join(PLAIN))
    assert replay("zero_usage") == [
        *text("msg-run-1-1", *PLAIN),
        finished(*usage(100, -(-answer_chars // 4)), result={"usageEstimated": True}),
    ]


def test_thoughts_are_not_in_stream_json() -> None:
    assert replay("think_dropped") == [
        *text("msg-run-1-1", *PLAIN),
        finished(*usage(100, 15)),
    ]


def test_http_errors_become_actionable_run_errors() -> None:
    assert replay("error401") == [{
        "type": "RUN_ERROR", "code": "AUTH_FAILED",
        "message": "The Gemini API rejected the credentials (HTTP 401: API key not valid. Please pass a valid API "
                   f"key. (scripted)). {CREDENTIALS}"}]
    assert replay("error429") == [{
        "type": "RUN_ERROR", "code": "RATE_LIMITED",
        "message": "The Gemini API quota or rate limit was reached (HTTP 429: Resource has been exhausted (e.g. "
                   "check quota). (scripted)). Wait a moment and try again, or check the project's quota and "
                   "billing."}]
    assert replay("error500") == [{
        "type": "RUN_ERROR", "code": "PROVIDER_ERROR",
        "message": "The Gemini API had a server error (HTTP 500: An internal error has occurred. (scripted)). "
                   "This is usually temporary: try again in a moment."}]


def test_interrupted_stream_without_result() -> None:
    chunks = ("slow chunk 0. ", "slow chunk 1. ", "slow chunk 2. ")
    assert replay("interrupt_slow", finish=False) == text("msg-run-1-1", *chunks)[:-1]  # still open
    assert replay("interrupt_slow") == [
        *text("msg-run-1-1", *chunks),
        {"type": "RUN_ERROR", "code": "CLI_EXITED",
         "message": "The Gemini CLI exited with code 0 before finishing the turn."}]
    adapter = GeminiCliAdapter("t", "r")
    for line in (FIXTURES / "interrupt_slow.stdout.jsonl").read_text().splitlines():
        adapter.feed(line)
    assert [wire(e) for e in adapter.finish()] == [{"type": "TEXT_MESSAGE_END", "messageId": "msg-r-1"}]


def test_finish_names_the_signal_and_keeps_the_stderr_tail() -> None:
    adapter = GeminiCliAdapter("t", "r")
    assert [wire(e) for e in adapter.finish(Exit(-9, "boom\n"))] == [{
        "type": "RUN_ERROR", "code": "CLI_KILLED",
        "message": "The Gemini CLI was killed by SIGKILL before finishing the turn (out of memory, or stopped from "
                   "outside).\nLast lines of the CLI's stderr:\nboom"}]
    assert adapter.finish(Exit(0)) == []  # one terminal only


def test_lines_it_does_not_know_are_kept_as_raw_events() -> None:
    adapter = GeminiCliAdapter("t", "r")
    lines = [
        "Loaded cached credentials.",  # not JSON
        '{"type":"thought","content":"hm"}',  # a type from a future CLI
        '{"type":"tool_use","tool_name":"x"}',  # a known type missing its fields
        "",  # blank: nothing
        '[1, 2]',
        '{"type":"message","role":"assistant","content":"","delta":true}',  # empty delta: dropped
        '{"type":"message","role":"assistant","content":"hi","delta":true,"newField":1}',
        '{"type":"error","severity":"warning","message":"Loop detected, stopping"}',
        '{"type":"tool_result","tool_id":"never-started","status":"success","output":"x"}',
    ]
    events = [wire(e) for line in lines for e in adapter.feed(line)]
    assert events == [
        {"type": "RAW", "event": "Loaded cached credentials.", "source": "gemini-cli",
         "metadata": {"reason": "not_json", "detail": "Expecting value: line 1 column 1 (char 0)"}},
        {"type": "RAW", "event": {"type": "thought", "content": "hm"}, "source": "gemini-cli",
         "metadata": {"reason": "unknown_type"}},
        {"type": "RAW", "event": {"type": "tool_use", "tool_name": "x"}, "source": "gemini-cli",
         "metadata": {"reason": "invalid", "detail": "Field required"}},
        {"type": "RAW", "event": [1, 2], "source": "gemini-cli", "metadata": {"reason": "not_object"}},
        {"type": "TEXT_MESSAGE_START", "messageId": "msg-r-1", "role": "assistant",
         "rawEvent": {"unknownFields": {"newField": 1}}},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-r-1", "delta": "hi"},
        {"type": "CUSTOM", "name": "gemini-cli/warning",
         "value": {"severity": "warning", "message": "Loop detected, stopping"}},
        {"type": "RAW", "event": {"type": "tool_result", "timestamp": None, "tool_id": "never-started",
                                  "status": "success", "output": "x", "error": None},
         "source": "gemini-cli", "metadata": {"note": "tool_result for a tool call that was never started"}},
    ]
    assert adapter.terminal is None  # a warning does not end the run


def test_a_line_cut_at_the_size_limit_closes_its_tool_call() -> None:
    adapter = GeminiCliAdapter("t", "r")
    adapter.feed('{"type":"tool_use","tool_name":"read_file","tool_id":"t1","parameters":{}}')
    head = '{"type":"tool_result","timestamp":"2026-11-30T00:00:00Z","tool_id":"t1","status":"success","output":"aaaa'
    events = [wire(e) for e in adapter.feed(head, dropped_bytes=10_000_000)]
    assert events == [
        {"type": "RAW", "event": head, "source": "gemini-cli",
         "metadata": {"reason": "line_too_long", "droppedBytes": 10_000_000}},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1-result", "toolCallId": "t1", "role": "tool",
         "content": f"(The tool's output was too large to show: {len(head) + 10_000_000} bytes.)"},
    ]


async def test_events_runs_the_whole_stream() -> None:
    async def lines():
        for line in (FIXTURES / "plain.stdout.jsonl").read_text().splitlines():
            yield line

    adapter = GeminiCliAdapter("thread-1", "run-1")
    events = normalise([wire(e) async for e in adapter.stream(lines())])
    assert events == replay("plain")
    assert adapter.model == "gemini-2.5-flash" and adapter.terminal is not None
