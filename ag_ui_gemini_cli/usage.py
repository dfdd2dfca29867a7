"""Token usage from a ``result`` line's ``stats`` as AG-UI ``TokenUsage`` entries (one per model)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ag_ui.core import TokenUsage

from ag_ui_gemini_cli.events import ModelStats, ResultStats

PROVIDER = "google"
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Usage:
    entries: list[TokenUsage]
    estimated: bool = False


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN)) if text else 0


def _entry(model: str | None, stats: ModelStats, output_tokens: int | None = None) -> TokenUsage:
    output = stats.output_tokens if output_tokens is None else output_tokens
    total = stats.total_tokens if output_tokens is None else stats.input_tokens + output
    return TokenUsage(provider=PROVIDER, model=model, input_tokens=stats.input_tokens, output_tokens=output,
                      total_tokens=total, cached_input_tokens=stats.cached)


def usage_from_stats(stats: ResultStats | None, default_model: str | None, answer_text: str) -> Usage:
    """Per-model usage; when the CLI counted 0 output tokens for a non-empty answer, estimate them
    (~4 characters a token) on the model that answered last and mark the usage as estimated."""
    if stats is None:
        return Usage([])
    models = dict(stats.models) or {default_model or "unknown": stats}
    estimate = estimate_tokens(answer_text) if stats.output_tokens == 0 and answer_text else 0
    entries: list[TokenUsage] = []
    names = list(models)
    for name in names:
        estimated_here = estimate if (estimate and name == names[-1]) else None
        entries.append(_entry(name, models[name], estimated_here))
    return Usage(entries, estimated=bool(estimate))
