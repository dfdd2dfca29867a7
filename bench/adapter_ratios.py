"""Our adapters against the reference runner's, on the same input: lines the CLI prints -> SSE frames, each side
doing what its runner does per line. Wall clock (interleaved: one side's process, then the other's, the order
alternating) and instructions counted by ``valgrind --tool=callgrind`` (repeatable on a busy machine).

* Gemini stream-json: ours ``GeminiCliAdapter`` -> ``event_json`` (two secrets redacted) -> ``sse_frame``; the
  reference's ``ag_ui_gemini_cli.GeminiCLIAdapter.run`` -> its ``secret_redaction_middleware`` (two secrets in the
  environment) -> ``ag_ui.encoder.EventEncoder``.
* Claude: ours ``json.loads`` -> ``ClaudeEventAdapter.feed`` -> the same encoding; the reference's ``json.loads`` ->
  the SDK's ``parse_message`` (its runner gets SDK message objects) -> ``ag_ui_claude_sdk.ClaudeAgentAdapter.run`` ->
  the same middleware and encoder.
* Gemini ACP and Codex have no reference adapter: lines/s of ours (ACP: ``json.loads`` of the JSON-RPC line ->
  ``GeminiAcpAdapter``; Codex: ``bench/adapters.py``).

The streams are the recorded turns in tests/fixtures (gemini/basic_tool, claude/tool_call), their middle repeated
(ids made unique per repetition) to the length asked. The reference runner is read from its folder, never copied:
``--reference DIR`` or ``AMBIENT_REFERENCE_RUNNER`` (the folder holding ``ag_ui_gemini_cli``); without one the
ratios say "reference not available". Each side runs in its own process (both projects have an ``ambient_runner``
and an ``ag_ui_gemini_cli`` package). The reference's loggers stay at WARNING, as ours: its per-line
``logger.info`` costs only the level check.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import PYTHON, REPO, shown_path, summary

REFERENCE_VAR = "AMBIENT_REFERENCE_RUNNER"
FIXTURES = REPO / "tests" / "fixtures"
SECRETS = {"GEMINI_API_KEY": "fake-api-key-0123456789", "BOT_TOKEN": "agui-token-abcdef"}
KINDS = ("gemini", "claude")
_IDS = re.compile(r"\b(toolu_[A-Za-z0-9_]+|msg_scripted_\d+|run_shell_command__[A-Za-z0-9_]+)")


def reference_dir(given: str | None = None) -> Path | None:
    """The reference runner's folder, if given (option or environment) and it holds both adapters."""
    raw = given or os.environ.get(REFERENCE_VAR, "")
    if not raw:
        return None
    path = Path(raw).expanduser().resolve()
    return path if (path / "ag_ui_gemini_cli").is_dir() and (path / "ag_ui_claude_sdk").is_dir() else None


# ----- the streams ------------------------------------------------------------------------------------------
def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def _repeat(head: list[str], middle: list[str], tail: list[str], lines: int) -> list[str]:
    out = list(head)
    rep = 0
    while len(out) + len(tail) < lines:
        out += [_IDS.sub(lambda m, r=rep: f"{m.group(0)}_{r}", line) for line in middle]
        rep += 1
    return out + tail


def gemini_stream(lines: int) -> list[str]:
    """init, the prompt, then (text delta, tool call, tool result, text deltas) repeated, then the result."""
    recorded = _lines(FIXTURES / "gemini" / "basic_tool.stdout.jsonl")
    return _repeat(recorded[:2], recorded[2:-1], recorded[-1:], lines)


def claude_stream(lines: int) -> list[str]:
    """system init, then (a model request with text and a tool call, its result, the answer) repeated, then the
    result."""
    recorded = _lines(FIXTURES / "claude" / "tool_call.jsonl")
    return _repeat(recorded[:1], recorded[1:-1], recorded[-1:], lines)


def acp_stream(lines: int) -> list[str]:
    """ACP ``session/update`` notifications as ``gemini --acp`` sends them (a thought, message chunks, a tool call
    and its update), repeated, then the prompt's result."""

    def update(body: dict[str, Any]) -> str:  # compact, as the CLI writes it (JSON.stringify)
        return json.dumps({"jsonrpc": "2.0", "method": "session/update",
                           "params": {"sessionId": "s-1", "update": body}}, separators=(",", ":"))

    def chunk(kind: str, text: str) -> dict[str, Any]:
        return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}

    out: list[str] = []
    rep = 0
    while len(out) + 1 < lines:
        call = f"run_shell_command__run_shell_command_{rep}_0"
        out += [update(chunk("agent_thought_chunk", "**Planning**\nI should run a shell command.")),
                update(chunk("agent_message_chunk", "I will run a shell command.")),
                update({"sessionUpdate": "tool_call", "toolCallId": call, "status": "in_progress",
                        "title": "echo hello > out.txt", "locations": [], "kind": "execute",
                        "content": [{"type": "content", "content": {"type": "text", "text": "[cwd /w]"}}]}),
                update({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed",
                        "title": "echo hello > out.txt", "content": [], "locations": [], "kind": "execute"}),
                *[update(chunk("agent_message_chunk", f" part {i} of the answer.")) for i in range(6)]]
        rep += 1
    quota = {"token_count": {"input_tokens": 200, "output_tokens": 30},
             "model_usage": [{"model": "gemini-2.5-flash", "token_count": {"input_tokens": 200, "output_tokens": 30}}]}
    return out + [json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"stopReason": "end_turn",
                                                                     "_meta": {"quota": quota}}})]


STREAMS = {"gemini": gemini_stream, "claude": claude_stream, "acp": acp_stream}


# ----- one side, in its own process --------------------------------------------------------------------------
def _ours(kind: str) -> Any:
    """Lines -> events -> SSE frames, each event encoded as it comes (``bench/adapters.py``, as the runner does)."""
    sys.path.insert(0, str(REPO / "bench"))
    from adapters import _claude, _gemini, _gemini_acp, encoded  # noqa: PLC0415

    events = {"gemini": _gemini, "claude": _claude, "acp": _gemini_acp}[kind]
    return lambda lines: encoded(events(lines))


def _reference(kind: str, folder: Path) -> Any:
    import asyncio  # noqa: PLC0415

    # the reference's packages, never ours (same names): its folder first, our editable install's finder out
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path[:] = [str(folder)] + [p for p in sys.path if Path(p or ".").resolve() not in (REPO, REPO / "bench")]
    os.environ.update(SECRETS)
    from ag_ui.core import RunAgentInput, UserMessage  # noqa: PLC0415
    from ag_ui.encoder import EventEncoder  # noqa: PLC0415
    from ambient_runner.middleware.secret_redaction import secret_redaction_middleware  # noqa: PLC0415

    assert str(folder) in sys.modules["ambient_runner"].__file__, "not the reference's ambient_runner"
    encoder = EventEncoder(accept="text/event-stream")
    run_input = RunAgentInput(thread_id="thread", run_id="run", state={}, tools=[], context=[], forwarded_props={},
                              messages=[UserMessage(id="u-1", role="user", content="Create out.txt with hello")])

    async def drain(events: Any) -> tuple[int, int]:
        count = size = 0
        async for event in secret_redaction_middleware(events):
            count += 1
            size += len(encoder.encode(event))
        return count, size

    if kind == "gemini":
        from ag_ui_gemini_cli import GeminiCLIAdapter  # noqa: PLC0415

        async def gemini(lines: list[str]) -> tuple[int, int]:
            async def line_stream() -> Any:
                for line in lines:
                    yield line

            return await drain(GeminiCLIAdapter().run(run_input, line_stream=line_stream()))

        return lambda lines: asyncio.run(gemini(lines))

    from ag_ui_claude_sdk import ClaudeAgentAdapter  # noqa: PLC0415
    from claude_agent_sdk._internal.message_parser import parse_message  # noqa: PLC0415

    async def claude(lines: list[str]) -> tuple[int, int]:
        async def message_stream() -> Any:
            for line in lines:
                message = parse_message(json.loads(line))
                if message is not None:
                    yield message

        return await drain(ClaudeAgentAdapter("bench").run(run_input, message_stream=message_stream()))

    return lambda lines: asyncio.run(claude(lines))


def worker(side: str, kind: str, stream_file: str, passes: int, warm: int, folder: str) -> dict[str, Any]:
    """Translate the stream ``warm`` times untimed, then ``passes`` times timed; prints what it did."""
    translate = _ours(kind) if side == "ours" else _reference(kind, Path(folder))
    logging.disable(logging.INFO)  # both sides' loggers at WARNING (the reference's imports turn INFO on)
    lines = _lines(Path(stream_file))
    out = (0, 0)
    for _ in range(warm):
        out = translate(lines)
    started = time.perf_counter()
    # through functools.reduce (C: functools_reduce), which callgrind counts alone (--toggle-collect)
    out = functools.reduce(lambda _, __: translate(lines), range(passes), out)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "lines": len(lines) * passes, "events": out[0], "sse_bytes": out[1]}


# ----- the driver ---------------------------------------------------------------------------------------------
def _run_worker(side: str, kind: str, stream: Path, passes: int, warm: int, folder: Path | None,
                callgrind: bool = False) -> dict[str, Any]:
    argv = [PYTHON, __file__, "--worker", side, kind, str(stream), str(passes), str(warm), str(folder or "")]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if not callgrind:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
        if done.returncode:
            raise RuntimeError(f"{side} {kind} worker failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.splitlines()[-1])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                               "--collect-atstart=no", "--toggle-collect=functools_reduce", *argv],
                              capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode:
            raise RuntimeError(f"callgrind {side} {kind} failed:\n{done.stderr[-3000:]}")
        match = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
        assert match, "no summary in the callgrind output"
        return {"instructions": int(match.group(1))}


def _instructions_per_line(side: str, kind: str, stream: Path, lines: int, folder: Path | None) -> float:
    """Instructions of one pass after a first one (only the timed pass is counted: start-up and imports are not),
    per line."""
    return _run_worker(side, kind, stream, 1, 1, folder, callgrind=True)["instructions"] / lines


# The tiniest workload (``--smoke``): shows the script runs and prints its figures, which then mean nothing.
SMOKE = {"lines": 300, "runs": 1, "callgrind_lines": 0}  # no callgrind: minutes per run (Python's imports)


def measure(lines: int = 100_000, runs: int = 5, callgrind_lines: int = 3_000,
            reference: str | None = None) -> dict[str, Any]:
    folder = reference_dir(reference)
    has_valgrind = callgrind_lines > 0 and shutil.which("valgrind") is not None
    results: dict[str, Any] = {"reference": shown_path(folder) if folder else "reference not available",
                               "lines": lines, "runs": runs, "callgrind_lines": callgrind_lines}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, make in STREAMS.items():
            stream, small = Path(tmp) / f"{kind}.jsonl", Path(tmp) / f"{kind}-small.jsonl"
            stream.write_text("\n".join(make(lines)) + "\n")
            small.write_text("\n".join(make(callgrind_lines)) + "\n")
            n, n_small = len(_lines(stream)), len(_lines(small))
            sides = ["ours"] + (["reference"] if folder and kind in KINDS else [])
            rates: dict[str, list[float]] = {side: [] for side in sides}
            sizes: dict[str, dict[str, int]] = {}
            for i in range(runs):
                for side in (sides if i % 2 == 0 else sides[::-1]):
                    done = _run_worker(side, kind, stream, 1, 1, folder)
                    rates[side].append(done["lines"] / done["seconds"])
                    sizes[side] = {"events": done["events"], "sse_bytes": done["sse_bytes"]}
            entry: dict[str, Any] = {"stream_lines": n, "lines_per_s": {s: summary(v) for s, v in rates.items()},
                                     "output": sizes}
            if has_valgrind:
                entry["instructions_per_line"] = {
                    side: _instructions_per_line(side, kind, small, n_small, folder) for side in sides}
            if len(sides) == 2:
                pairs = [o / r for o, r in zip(rates["ours"], rates["reference"], strict=True)]  # one per round
                entry["wall_ratio"] = summary(pairs)["p50"]
                if has_valgrind:
                    counted = entry["instructions_per_line"]
                    entry["instruction_ratio"] = counted["reference"] / counted["ours"]
            else:
                entry["wall_ratio"] = entry["instruction_ratio"] = (
                    "no reference adapter" if kind not in KINDS else "reference not available")
            results[kind] = entry
    return results


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        side, kind, stream_file, passes, warm, folder = sys.argv[2:8]
        print(json.dumps(worker(side, kind, stream_file, int(passes), int(warm), folder)))
        raise SystemExit(0)
    from common import smoke

    given = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--reference=")), None)
    print(json.dumps(measure(**SMOKE, reference=given) if smoke() else measure(reference=given), indent=1))
