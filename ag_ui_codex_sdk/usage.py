"""The turn's token usage from ``thread/tokenUsage/updated``.

Measured on the pinned codex (docs/runners.md#versions): the notification comes after every model response;
``tokenUsage.last`` is that one response and ``tokenUsage.total`` is cumulative for the *thread*. The turn's usage
is therefore the last ``total`` minus the ``total`` before the turn's first response (first ``total`` - first
``last``), which also holds when an update is repeated.
"""

from __future__ import annotations

from ag_ui.core import TokenUsage

from ag_ui_cli_common.json_types import JsonObject, JsonValue

FIELDS = {  # Codex breakdown key -> TokenUsage field
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "totalTokens": "total_tokens",
    "reasoningOutputTokens": "reasoning_tokens",
    "cachedInputTokens": "cached_input_tokens",
    "cacheWriteInputTokens": "cache_write_input_tokens",
}


def _counts(breakdown: JsonValue) -> dict[str, int]:
    if not isinstance(breakdown, dict):
        return {}
    return {key: int(value) for key, value in breakdown.items()
            if key in FIELDS and isinstance(value, int | float) and value >= 0}


class TurnUsage:
    def __init__(self, model: str | None = None) -> None:
        self.model = model
        self._baseline: dict[str, int] | None = None
        self._latest: dict[str, int] = {}

    def update(self, token_usage: JsonObject) -> None:
        total, last = _counts(token_usage.get("total")), _counts(token_usage.get("last"))
        if not total:
            return
        if self._baseline is None:
            self._baseline = {key: max(0, value - last.get(key, 0)) for key, value in total.items()}
        self._latest = total

    def token_usage(self) -> TokenUsage | None:
        if not self._latest or self._baseline is None:
            return None
        counts = {FIELDS[key]: max(0, value - self._baseline.get(key, 0)) for key, value in self._latest.items()}
        return TokenUsage(provider="openai", model=self.model, **counts)
