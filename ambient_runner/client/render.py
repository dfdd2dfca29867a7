"""Turning AG-UI event dicts (camelCase, as they arrive over SSE) into terminal output for a person.

``EventRenderer.handle(event)`` prints each event as it comes: assistant text streams as is, reasoning streams
dimmed, a tool call shows its name, its arguments once they are complete, and its result; errors are red; the
terminal event prints a summary line (outcome, token usage, duration). While the agent works without printing
(before the first text, during a tool call) a spinner runs, on an interactive terminal only.

No transport here: the caller feeds events from wherever they come (``client.py``).
"""

from __future__ import annotations

import json
import time
from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

MAX_ARGS_CHARS = 600
MAX_RESULT_LINES = 12
MAX_RESULT_CHARS = 1500
TERMINAL_TYPES = frozenset({"RUN_FINISHED", "RUN_ERROR"})


class EventRenderer:
    def __init__(self, console: Console, *, spinner: bool | None = None) -> None:
        self.console = console
        self.spinner_enabled = console.is_terminal if spinner is None else spinner
        self._status: Status | None = None
        self._started = time.monotonic()
        self._line_open = False  # text was printed without its closing newline
        self._streaming: str | None = None  # "text" | "reasoning" while a block streams
        self._tool_names: dict[str, str] = {}
        self._tool_args: dict[str, str] = {}
        self.outcome: str | None = None  # "success" | "error" | "cancelled" | "interrupt" after the terminal event
        self.error_message: str | None = None

    # ----- spinner ---------------------------------------------------------------------------------------
    def working(self, what: str = "working") -> None:
        if not self.spinner_enabled:
            return
        label = f"[dim]{what}…[/dim]"
        if self._status is None:
            self._status = self.console.status(label, spinner="dots")
            self._status.start()
        else:
            self._status.update(label)

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def close(self) -> None:
        self._stop_spinner()
        self._end_line()

    # ----- output helpers --------------------------------------------------------------------------------
    def _end_line(self) -> None:
        if self._line_open:
            self.console.print()
            self._line_open = False

    def _stream(self, kind: str, delta: str, style: str = "") -> None:
        self._stop_spinner()
        if self._streaming != kind:
            self._end_line()
            self._streaming = kind
        self.console.print(Text(delta, style=style), end="", soft_wrap=True, highlight=False)
        self._line_open = not delta.endswith("\n")

    def _line(self, text: Text) -> None:
        self._stop_spinner()
        self._end_line()
        self._streaming = None
        self.console.print(text, soft_wrap=True, highlight=False)

    # ----- events ----------------------------------------------------------------------------------------
    def handle(self, event: dict[str, Any]) -> None:
        handler = getattr(self, "_on_" + str(event.get("type", "")).lower(), None)
        if handler is not None:
            handler(event)

    def _on_run_started(self, event: dict[str, Any]) -> None:
        self._started = time.monotonic()
        self.working("thinking")

    def _on_text_message_content(self, event: dict[str, Any]) -> None:
        if event.get("delta"):
            self._stream("text", event["delta"])

    def _on_text_message_end(self, event: dict[str, Any]) -> None:
        self._end_line()
        self._streaming = None
        self.working()

    def _on_reasoning_message_content(self, event: dict[str, Any]) -> None:
        if event.get("delta"):
            self._stream("reasoning", event["delta"], "dim italic")

    _on_thinking_text_message_content = _on_reasoning_message_content
    _on_reasoning_message_end = _on_text_message_end
    _on_thinking_text_message_end = _on_text_message_end

    def _on_tool_call_start(self, event: dict[str, Any]) -> None:
        call_id = event.get("toolCallId", "")
        self._tool_names[call_id] = event.get("toolCallName", "tool")
        self._tool_args[call_id] = ""
        self.working(f"calling {self._tool_names[call_id]}")

    def _on_tool_call_args(self, event: dict[str, Any]) -> None:
        call_id = event.get("toolCallId", "")
        self._tool_args[call_id] = self._tool_args.get(call_id, "") + event.get("delta", "")

    def _on_tool_call_end(self, event: dict[str, Any]) -> None:
        call_id = event.get("toolCallId", "")
        name = self._tool_names.get(call_id, "tool")
        line = Text("⚙ ", style="cyan")
        line.append(name, style="bold cyan")
        args = _compact_args(self._tool_args.pop(call_id, ""))
        if args:
            line.append(" " + args, style="cyan")
        self._line(line)
        self.working(f"running {name}")

    def _on_tool_call_result(self, event: dict[str, Any]) -> None:
        content = _clip_result(str(event.get("content", "")))
        name = self._tool_names.get(event.get("toolCallId", ""), "tool")
        line = Text(f"  ↳ {name}: ", style="dim cyan")
        line.append((content or "(no output)").replace("\n", "\n    "), style="dim")
        self._line(line)
        self.working()

    def _on_custom(self, event: dict[str, Any]) -> None:
        value = found if isinstance(found := event.get("value"), dict) else {}
        if event.get("name") == "ambient:message_accepted" and value.get("mode") == "queued":
            self.message(f"queued (#{value.get('position', '?')}): runs when the thread's current run ends", "dim")
            self.working("waiting")
        elif event.get("name") == "ambient:message_accepted" and value.get("mode") == "steered":
            self.message("sent into the thread's running turn", "dim")

    def _on_step_started(self, event: dict[str, Any]) -> None:
        self.working(str(event.get("stepName", "working")))

    def _on_run_error(self, event: dict[str, Any]) -> None:
        self.outcome = "error"
        self.error_message = str(event.get("message", "the run failed"))
        text = Text("✗ error", style="bold red")
        if event.get("code"):
            text.append(f" [{event['code']}]", style="red")
        text.append(": " + self.error_message, style="red")
        self._line(text)
        self._summary(event)

    def _on_run_finished(self, event: dict[str, Any]) -> None:
        outcome = event.get("outcome")
        kind = outcome.get("type") if isinstance(outcome, dict) else None
        self.outcome = kind if kind in ("cancelled", "interrupt") else "success"
        if kind == "cancelled":
            self._line(Text("⏹ cancelled", style="bold yellow"))
        self._summary(event)

    def _summary(self, event: dict[str, Any]) -> None:
        parts = [f"{time.monotonic() - self._started:.1f}s"]
        parts.extend(_usage_parts(event.get("usage")))
        result = event.get("result")
        if isinstance(result, dict) and isinstance(result.get("costUsd"), int | float):
            parts.append(f"${result['costUsd']:.4f}")
        mark = {"success": "✓ done", "cancelled": "⏹", "error": "✗", "interrupt": "⏸ waiting for you"}.get(
            self.outcome or "", "")
        self._line(Text(f"{mark} · " + " · ".join(parts), style="dim green" if self.outcome == "success"
                        else "dim"))

    def message(self, text: str, style: str = "yellow") -> None:
        """A note from the client itself (reconnecting, interrupt sent, ...)."""
        self._line(Text(text, style=style))


def _compact_args(raw: str) -> str:
    if not raw:
        return ""
    try:
        raw = json.dumps(json.loads(raw), ensure_ascii=False, separators=(", ", ": "))
    except ValueError:
        pass
    return raw if len(raw) <= MAX_ARGS_CHARS else raw[:MAX_ARGS_CHARS] + "…"


def _clip_result(content: str) -> str:
    content = content.strip("\n")
    lines = content.splitlines()
    clipped = "\n".join(lines[:MAX_RESULT_LINES])
    if len(clipped) > MAX_RESULT_CHARS:
        clipped = clipped[:MAX_RESULT_CHARS]
    if clipped != content:
        clipped += f"\n  … ({len(lines)} lines, {len(content)} chars)"
    return clipped


def _usage_parts(usage: Any) -> list[str]:
    """``usage`` is a list of TokenUsage dicts (one per model) or a single one."""
    entries = usage if isinstance(usage, list) else [usage] if isinstance(usage, dict) else []
    totals: dict[str, int] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        for key in ("inputTokens", "outputTokens", "reasoningTokens", "cachedInputTokens", "totalTokens"):
            if isinstance(entry.get(key), int):
                totals[key] = totals.get(key, 0) + entry[key]
    labels = {"inputTokens": "in", "outputTokens": "out", "reasoningTokens": "reasoning",
              "cachedInputTokens": "cached", "totalTokens": "total"}
    if not totals:
        return []
    return ["tokens " + ", ".join(f"{labels[k]} {v:,}" for k, v in totals.items())]
