"""The same failure gets the same RUN_ERROR whichever CLI met it.

Each CLI's own recorded native stream (Claude Code stream-json, Codex app-server notifications, Gemini CLI
stream-json: tests/fixtures/<cli>/, recorded from the real CLIs against the scripted model servers by
tests/fixtures/record_*.py) goes through the whole adapter, as the adapter gets it, for each failure:

* HTTP 400, 401, 429, 500 from the model API: the streams recorded with the server in that error mode;
* a SIGKILL: a recorded answer cut after its first text, then the CLI's exit by SIGKILL;
* a malformed line: a recorded answer whose last line (the turn's end) is cut in half, then exit code 1.

Every adapter ends with one RUN_ERROR, asserted whole (but for the loopback port the recorder's scripted server
happened to get: ``127.0.0.1:<port>``), with the same code. The HTTP statuses the CLIs were not
recorded with (403, 404, 503, 529) are the recorded 401 streams with the status rewritten where the CLI writes it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from events import run_error, wire_all

from ag_ui_claude import ClaudeEventAdapter
from ag_ui_cli_common import CliAdapter, ErrorCode, Exit, code_for_exit, code_for_status
from ag_ui_codex_sdk import CodexEventAdapter
from ag_ui_gemini_cli import GeminiCliAdapter

FIXTURES = Path(__file__).parent.parent / "fixtures"
CLIS = ("claude", "codex-sdk", "gemini-cli")
ANSWER = {"claude": "claude/partial_text.jsonl", "codex-sdk": "codex/text_deltas.jsonl",
          "gemini-cli": "gemini/plain.stdout.jsonl"}  # a recorded plain answer of each CLI
HTTP = {status: {"claude": f"claude/error{status}.jsonl", "codex-sdk": f"codex/error{status}.jsonl",
                 "gemini-cli": f"gemini/error{status}.stdout.jsonl"} for status in (400, 401, 429, 500)}
HINT = {"claude": " Check ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN, ANTHROPIC_AUTH_TOKEN, or the Vertex "
                  "credentials) configured for this session.",
        "codex-sdk": " Check OPENAI_API_KEY / CODEX_API_KEY (or the mounted auth.json).",
        "gemini-cli": " Check GEMINI_API_KEY / GOOGLE_API_KEY, or the Vertex AI settings (GOOGLE_CLOUD_PROJECT, "
                      "GOOGLE_APPLICATION_CREDENTIALS), or the mounted login credentials."}
AGENT = {"claude": "Claude Code", "codex-sdk": "The Codex app-server", "gemini-cli": "The Gemini CLI"}
KILLED = " was killed by SIGKILL before finishing the turn (out of memory, or stopped from outside)."
EXPECTED: dict[str, tuple[str, dict[str, str]]] = {  # failure -> (code, each CLI's RUN_ERROR message)
    "http400": ("BAD_REQUEST", {
        "claude": "The Anthropic API rejected the request (HTTP 400). Claude Code said: API Error: 400 scripted "
                  "error 400",
        "codex-sdk": "The model API rejected the request (HTTP 400). Details: scripted bad request",
        "gemini-cli": "The Gemini API rejected the request (HTTP 400: Request contains an invalid argument "
                      "(scripted).)."}),
    "http401": ("AUTH_FAILED", {
        "claude": f"Anthropic rejected the API key (HTTP 401).{HINT['claude']} Claude Code said: Failed to "
                  "authenticate. API Error: 401 scripted error 401",
        "codex-sdk": f"OpenAI rejected the API key (HTTP 401).{HINT['codex-sdk']} Details: unexpected status 401 "
                     "Unauthorized: Incorrect API key provided: sk-scr***. You can find your API key at "
                     "https://platform.openai.com/account/api-keys.",
        "gemini-cli": "The Gemini API rejected the credentials (HTTP 401: API key not valid. Please pass a valid "
                      f"API key. (scripted)).{HINT['gemini-cli']}"}),
    "http429": ("RATE_LIMITED", {
        "claude": "The Anthropic API rate limit was reached (HTTP 429). Wait a minute and try again, or use a key "
                  "with a higher limit. Claude Code said: API Error: Request rejected (429) · scripted error 429",
        "codex-sdk": "OpenAI rate limit or quota reached (HTTP 429). Wait and retry, or check the plan and billing "
                     "of the OpenAI account. Details: Quota exceeded. Check your plan and billing details.",
        "gemini-cli": "The Gemini API quota or rate limit was reached (HTTP 429: Resource has been exhausted (e.g. "
                      "check quota). (scripted)). Wait a moment and try again, or check the project's quota and "
                      "billing."}),
    "http500": ("PROVIDER_ERROR", {
        "claude": "The Anthropic API had a server error (HTTP 500). This is usually temporary: try again in a "
                  "moment. Claude Code said: API Error: 500 scripted error 500. This is a server-side issue, "
                  "usually temporary — try again in a moment. If it persists, check your inference gateway "
                  "(127.0.0.1:<port>).",
        "codex-sdk": "The OpenAI API returned a server error (HTTP 5xx). Retry in a moment. Details: We\u2019re "
                     "currently experiencing high demand, which may cause temporary errors.",
        "gemini-cli": "The Gemini API had a server error (HTTP 500: An internal error has occurred. (scripted)). "
                      "This is usually temporary: try again in a moment."}),
    "sigkill": ("CLI_KILLED", {cli: AGENT[cli] + KILLED for cli in CLIS}),
    "malformed": ("CLI_EXITED", {cli: f"{AGENT[cli]} exited with code 1 before finishing the turn." for cli in CLIS}),
}


LOOPBACK_PORT = re.compile(r"(?<=127\.0\.0\.1:)\d+")


def without_port(event: dict[str, Any]) -> dict[str, Any]:
    """The event with the recorder's loopback port in its message as ``<port>`` (each recording has its own)."""
    if "message" in event:
        return {**event, "message": LOOPBACK_PORT.sub("<port>", event["message"])}
    return event


def adapter_for(cli: str) -> CliAdapter[Any]:
    if cli == "claude":
        return ClaudeEventAdapter("thread-1", "run-1")
    if cli == "codex-sdk":
        return CodexEventAdapter("thread-1", "run-1", model="gpt-5.5")
    return GeminiCliAdapter("thread-1", "run-1")


def recorded(path: str) -> list[str]:
    return [line for line in (FIXTURES / path).read_text().splitlines() if line.strip()]


def is_first_text(cli: str, line: str) -> bool:
    data = json.loads(line)
    if cli == "claude":
        return (data.get("event") or {}).get("delta", {}).get("type") == "text_delta"
    if cli == "codex-sdk":
        return data["method"] == "item/agentMessage/delta"
    return data["type"] == "message" and data["role"] == "assistant"


def native_stream(cli: str, failure: str) -> tuple[list[str], Exit | None]:
    """The lines the adapter gets for this failure, and how the CLI process ended (None: it did not)."""
    if failure.startswith("http"):
        return recorded(HTTP[int(failure[4:])][cli]), None
    lines = recorded(ANSWER[cli])
    if failure == "sigkill":
        first = next(i for i, line in enumerate(lines) if is_first_text(cli, line))
        return lines[: first + 1], Exit(-9)
    return [*lines[:-1], lines[-1][: len(lines[-1]) // 2]], Exit(1)  # the turn's end, cut short


def events_of(cli: str, failure: str) -> list[dict[str, Any]]:
    lines, exit = native_stream(cli, failure)
    return wire_all(adapter_for(cli).run(lines, exit), drop=["timestamp"])


@pytest.mark.parametrize("failure", list(EXPECTED))
def test_the_same_failure_gets_the_same_run_error(failure: str) -> None:
    code, messages = EXPECTED[failure]
    events = {cli: events_of(cli, failure) for cli in CLIS}
    assert {cli: [without_port(e) for e in events[cli] if e["type"] == "RUN_ERROR"] for cli in CLIS} == {
        cli: [run_error(code, messages[cli])] for cli in CLIS}
    assert all(events[cli][-1]["type"] == "RUN_ERROR" for cli in CLIS)


@pytest.mark.parametrize("failure", ["sigkill", "malformed"])
@pytest.mark.parametrize("cli", CLIS)
def test_a_cli_that_ended_early_has_its_text_closed_before_the_error(cli: str, failure: str) -> None:
    events = events_of(cli, failure)
    kinds = [e["type"] for e in events]
    started = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
    assert len(started) == 1 and [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_END"] == started
    assert kinds.index("TEXT_MESSAGE_END") < kinds.index("RUN_ERROR") == len(kinds) - 1
    if failure == "malformed":  # the cut line is kept as it came, not dropped and not an exception
        cut = native_stream(cli, failure)[0][-1]
        assert [e["event"] for e in events if e["type"] == "RAW"] == [cut if cli == "gemini-cli" else {"line": cut}]


def rewritten(cli: str, status: int) -> list[str]:
    """The recorded 401 stream of ``cli`` with the status rewritten where the CLI writes it."""
    text = "\n".join(recorded(HTTP[401][cli]))
    if cli == "claude":
        return text.replace('"api_error_status": 401', f'"api_error_status": {status}').splitlines()
    if cli == "codex-sdk":
        text = text.replace('"httpStatusCode": 401', f'"httpStatusCode": {status}')
        return text.replace("unexpected status 401 Unauthorized", f"unexpected status {status}").splitlines()
    return text.replace('\\"code\\":401', f'\\"code\\":{status}').splitlines()


@pytest.mark.parametrize("status", [400, 401, 403, 404, 429, 500, 503, 529])
def test_one_status_one_code_for_every_adapter(status: int) -> None:
    expected = code_for_status(status)
    assert expected is not None
    codes = {cli: [e["code"] for e in wire_all(adapter_for(cli).run(rewritten(cli, status)))
                   if e["type"] == "RUN_ERROR"] for cli in CLIS}
    assert codes == {cli: [expected] for cli in CLIS}


def test_the_mapping() -> None:
    statuses = [400, 401, 403, 404, 429, 500, 503, 529]
    assert [code_for_status(s) for s in statuses] == [
        ErrorCode.BAD_REQUEST, ErrorCode.AUTH_FAILED, ErrorCode.AUTH_FAILED, ErrorCode.MODEL_NOT_FOUND,
        ErrorCode.RATE_LIMITED, ErrorCode.PROVIDER_ERROR, ErrorCode.PROVIDER_ERROR, ErrorCode.PROVIDER_OVERLOADED]
    assert code_for_status(None) is None and code_for_status(302) is None
    assert [code_for_exit(c) for c in (-9, -15, 0, 1, None)] == [
        ErrorCode.CLI_KILLED, ErrorCode.CLI_KILLED, ErrorCode.CLI_EXITED, ErrorCode.CLI_EXITED, ErrorCode.CLI_EXITED]
