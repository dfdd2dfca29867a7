"""Result-side conversions: token usage, the RUN_FINISHED ``result`` summary, tool-result text."""

from __future__ import annotations

import json

from ag_ui.core import TokenUsage
from claude_agent_sdk import ResultMessage

from ag_ui_cli_common.json_types import JsonObject

TOOL_ERROR_PREFIX = "Tool error: "


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def token_usage(result: ResultMessage) -> list[TokenUsage] | None:
    """Anthropic usage -> ``[TokenUsage]`` (RUN_FINISHED.usage is a list).

    Input counts include cache reads and writes: they are input tokens too.
    """
    usage = result.usage if isinstance(result.usage, dict) else None
    if not usage:
        return None
    fresh, cache_read = _int(usage.get("input_tokens")), _int(usage.get("cache_read_input_tokens"))
    cache_write = _int(usage.get("cache_creation_input_tokens"))
    output = _int(usage.get("output_tokens"))
    thinking = _int((usage.get("output_tokens_details") or {}).get("thinking_tokens"))
    models = list((result.model_usage or {}).keys())
    total_input = fresh + cache_read + cache_write
    return [TokenUsage(input_tokens=total_input, output_tokens=output, total_tokens=total_input + output,
                      reasoning_tokens=thinking or None, cached_input_tokens=cache_read,
                      cache_write_input_tokens=cache_write, provider="anthropic",
                      model=models[0] if len(models) == 1 else None)]


def result_summary(result: ResultMessage) -> JsonObject:
    summary: JsonObject = {
        "costUsd": result.total_cost_usd, "durationMs": result.duration_ms, "durationApiMs": result.duration_api_ms,
        "numTurns": result.num_turns, "sessionId": result.session_id, "stopReason": result.stop_reason,
    }
    return {k: v for k, v in summary.items() if v is not None}


def tool_result_text(content: object, is_error: bool) -> str:
    """A tool result's content as text; an error result is prefixed so it is visible as one."""
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'content')}]")
            else:
                parts.append(str(part))
        text = "\n".join(parts)
    else:
        text = json.dumps(content, default=str)
    if is_error:
        return TOOL_ERROR_PREFIX + (text or "(no output)")
    return text or "(no output)"
