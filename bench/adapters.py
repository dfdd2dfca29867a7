"""Adapter throughput on the recorded real streams in tests/fixtures/<cli>/: lines in -> encoded SSE frames out
(``event_json`` with a redactor holding two secrets, then ``sse_frame``), the work the runner does per line. For
Gemini's ACP that includes typing each line as the runner does (``acp_schema``: the JSON-RPC envelope, then the
``session/update``, the permission request or the prompt's result)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
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


def _gemini(lines: list[str]) -> int:
    adapter = GeminiCliAdapter("thread", "run")
    return _encode([e for line in lines for e in adapter.feed(line)] + adapter.finish(Exit(0)))


def _gemini_acp(lines: list[str]) -> int:
    """One adapter per prompt (a prompt's result ends it); replies to other requests are only parsed."""
    adapter = GeminiAcpAdapter("thread", "run", model="gemini-2.5-flash")
    events: list[Any] = []
    for line in lines:
        message = parse_message(line)
        if isinstance(message, UpdateNotification):
            events += adapter.feed(message.params.update)
        elif message.method == "session/request_permission":
            events += adapter.permission(RequestPermissionParams.model_validate(message.params_object()).tool_call)
        elif "stopReason" in message.result_object():
            events += adapter.end(PromptResult.model_validate(message.result))
            adapter = GeminiAcpAdapter("thread", "run", model="gemini-2.5-flash")
    return _encode(events + adapter.finish())


def _codex(lines: list[str]) -> int:
    adapter = CodexEventAdapter("thread", "run", model="gpt-5.5")
    return _encode([e for line in lines for e in adapter.feed(json.loads(line))] + adapter.finish())


def _claude(lines: list[str]) -> int:
    adapter = ClaudeEventAdapter("thread", "run")
    return _encode([e for line in lines for e in adapter.feed(json.loads(line))] + adapter.finish())


def _encode(events: list[Any]) -> int:
    size = 0
    for seq, event in enumerate(events, 1):
        size += len(sse_frame(seq, event_json(event, REDACT)))
    return size


ADAPTERS: dict[str, tuple[str, str, Callable[[list[str]], int]]] = {
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
            translate(stream)
        rates = []
        for _ in range(runs):
            started = time.perf_counter()
            for _ in range(passes):
                for stream in streams:
                    translate(stream)
            rates.append(passes * per_pass / (time.perf_counter() - started))
        results[name] = {"lines_per_s": summary(rates), "streams": len(streams), "lines_per_pass": per_pass,
                         "files": [str(p.relative_to(REPO)) for p in sorted((FIXTURES / folder).glob(pattern))]}
    return results


if __name__ == "__main__":
    from common import smoke

    out = measure(**SMOKE) if smoke() else measure(runs=5)
    print(json.dumps({k: v["lines_per_s"]["p50"] for k, v in out.items()}, indent=1))
