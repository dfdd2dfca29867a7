"""Adapter throughput on the recorded real streams in tests/fixtures/<cli>/: lines in -> encoded SSE frames out
(``event_json`` with a redactor holding two secrets, then ``sse_frame``), the work the runner does per line. For
Gemini's ACP that includes typing each line as the runner does (``acp_schema``: the JSON-RPC envelope, then the
``session/update``, the permission request or the prompt's result)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from common import REPO, summary

from ag_ui_claude import ClaudeEventAdapter
from ag_ui_cli_common import Exit
from ag_ui_codex_sdk import CodexEventAdapter
from ag_ui_gemini_cli import GeminiAcpAdapter, GeminiCliAdapter
from ag_ui_gemini_cli.acp_schema import PromptResult, RequestPermissionParams, UpdateNotification, parse_message
from ambient_runner.stream.encoding import Redactor, event_json, sse_frame

FIXTURES = REPO / "tests" / "fixtures"
REDACT = Redactor(["fake-api-key-0123456789", "agui-token-abcdef"])


def _gemini(lines: list[str]) -> Iterator[Any]:
    adapter = GeminiCliAdapter("thread", "run")
    for line in lines:
        yield from adapter.feed(line)
    yield from adapter.finish(Exit(0))


def _gemini_acp(lines: list[str]) -> Iterator[Any]:
    """One adapter per prompt (a prompt's result ends it); replies to other requests are only parsed."""
    adapter = GeminiAcpAdapter("thread", "run", model="gemini-2.5-flash")
    for line in lines:
        message = parse_message(line)
        if isinstance(message, UpdateNotification):
            yield from adapter.feed(message.params.update)
        elif message.method == "session/request_permission":
            yield from adapter.permission(RequestPermissionParams.model_validate(message.params_object()).tool_call)
        elif "stopReason" in message.result_object():
            yield from adapter.end(PromptResult.model_validate(message.result))
            adapter = GeminiAcpAdapter("thread", "run", model="gemini-2.5-flash")
    yield from adapter.finish()


def _codex(lines: list[str]) -> Iterator[Any]:
    adapter = CodexEventAdapter("thread", "run", model="gpt-5.5")
    for line in lines:
        yield from adapter.feed(json.loads(line))
    yield from adapter.finish()


def _claude(lines: list[str]) -> Iterator[Any]:
    adapter = ClaudeEventAdapter("thread", "run")
    for line in lines:
        yield from adapter.feed(json.loads(line))
    yield from adapter.finish()


def encoded(events: Iterable[Any]) -> tuple[int, int]:
    """Each event written as an SSE frame as it comes, as the runner sends it: (events, bytes). A run's events are
    never held in a list (the collector would walk them all, again and again, on a long stream)."""
    count = size = 0
    for count, event in enumerate(events, 1):
        size += len(sse_frame(count, event_json(event, REDACT)))
    return count, size


ADAPTERS: dict[str, tuple[str, str, Callable[[list[str]], Iterator[Any]]]] = {
    "ag_ui_gemini_cli": ("gemini", "*.stdout.jsonl", _gemini),
    "ag_ui_gemini_cli (ACP)": ("gemini_acp", "*.stdout.jsonl", _gemini_acp),
    "ag_ui_codex_sdk": ("codex", "*.jsonl", _codex),
    "ag_ui_claude": ("claude", "*.jsonl", _claude),
}


def recorded(folder: str, pattern: str) -> list[list[str]]:
    return [[line for line in path.read_text().splitlines() if line.strip()]
            for path in sorted((FIXTURES / folder).glob(pattern))]


# The tiniest workload (``--smoke``): shows the script runs and prints its figures, which then mean nothing.
SMOKE = {"runs": 1, "min_lines": 100}


def measure(runs: int = 15, min_lines: int = 20_000) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, (folder, pattern, translate) in ADAPTERS.items():
        streams = recorded(folder, pattern)
        per_pass = sum(len(s) for s in streams)
        passes = max(1, min_lines // per_pass)
        for stream in streams:  # warm-up
            encoded(translate(stream))
        rates = []
        for _ in range(runs):
            started = time.perf_counter()
            for _ in range(passes):
                for stream in streams:
                    encoded(translate(stream))
            rates.append(passes * per_pass / (time.perf_counter() - started))
        results[name] = {"lines_per_s": summary(rates), "streams": len(streams), "lines_per_pass": per_pass,
                         "files": [str(p.relative_to(REPO)) for p in sorted((FIXTURES / folder).glob(pattern))]}
    return results


if __name__ == "__main__":
    from common import smoke

    out = measure(**SMOKE) if smoke() else measure(runs=5)
    print(json.dumps({k: v["lines_per_s"]["p50"] for k, v in out.items()}, indent=1))
