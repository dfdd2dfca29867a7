"""The token usage a model response states, read from the start and end of its body (where the Anthropic Messages,
OpenAI Responses and Gemini APIs put it, streamed or not), for the model request's span."""

from __future__ import annotations

import re

# (pattern, span attribute): the largest value seen wins (streams repeat cumulative counts).
PATTERNS = (
    (re.compile(rb'"(?:input_tokens|promptTokenCount|prompt_tokens)"\s*:\s*(\d+)'), "gen_ai.usage.input_tokens"),
    (re.compile(rb'"(?:output_tokens|candidatesTokenCount|completion_tokens)"\s*:\s*(\d+)'),
     "gen_ai.usage.output_tokens"),
)


def token_usage(sample: bytes) -> dict[str, int]:
    found: dict[str, int] = {}
    for pattern, attribute in PATTERNS:
        values = [int(m) for m in pattern.findall(sample)]
        if values:
            found[attribute] = max(values)
    return found
