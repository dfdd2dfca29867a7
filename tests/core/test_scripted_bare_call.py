"""The scripted models' ``BARECALL``: the model's answer is the call alone, no text before it (as GPT-5-class models
often answer), on each model API; without it the same prompt says a sentence first. What the real CLIs make of it
is in ``tests/approvals/test_codex_approvals.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer
from ambient_runner.scripted_models.base import ScriptedModelServer
from ambient_runner.scripted_models.gemini import ScriptedGeminiServer
from ambient_runner.scripted_models.openai_responses import OpenAIResponsesServer

WRITE = "Create out.txt with hello"


def responses_output(server: ScriptedModelServer, prompt: str, tools: list[dict[str, Any]] | None = None) -> list:
    body = {"model": "gpt-5.5", "input": [{"type": "message", "role": "user", "content": prompt}],
            "tools": tools if tools is not None else [{"type": "function", "name": "shell"}]}
    events = list(server.respond("POST", "/v1/responses", body).sse or ())
    return events[-1][1]["response"]["output"]


def anthropic_blocks(server: ScriptedModelServer, prompt: str) -> list[str]:
    body = {"model": "claude-scripted", "stream": False, "messages": [{"role": "user", "content": prompt}]}
    return [block["type"] for block in server.respond("POST", "/v1/messages", body).json_body["content"]]


def gemini_parts(server: ScriptedModelServer, prompt: str) -> list[str]:
    body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}]}
    frames: Iterator[tuple[str | None, Any]] = server.respond(
        "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", body).sse or iter(())
    return [next(iter(part)) for _, frame in frames for part in frame["candidates"][0]["content"]["parts"]]


@pytest.fixture
def servers() -> Iterator[dict[str, ScriptedModelServer]]:
    made: dict[str, ScriptedModelServer] = {"responses": OpenAIResponsesServer().start(),
                                            "anthropic": AnthropicScriptedServer().start(),
                                            "gemini": ScriptedGeminiServer().start()}
    yield made
    for server in made.values():
        server.stop()


def test_a_bare_call_has_no_text_before_it(servers: dict[str, ScriptedModelServer]) -> None:
    assert [item["type"] for item in responses_output(servers["responses"], WRITE)] == ["message", "function_call"]
    assert [item["type"] for item in responses_output(servers["responses"], f"BARECALL {WRITE}")] == [
        "function_call"]
    assert [item["type"] for item in responses_output(servers["responses"], f"THINK BARECALL {WRITE}")] == [
        "reasoning", "function_call"]
    patch = responses_output(servers["responses"], "BARECALL PATCH", tools=[{"type": "custom", "name": "apply_patch"}])
    assert [item["type"] for item in patch] == ["custom_tool_call"]
    assert anthropic_blocks(servers["anthropic"], WRITE) == ["text", "tool_use"]
    assert anthropic_blocks(servers["anthropic"], f"BARECALL {WRITE}") == ["tool_use"]
    assert gemini_parts(servers["gemini"], WRITE) == ["text", "functionCall"]
    assert gemini_parts(servers["gemini"], f"BARECALL {WRITE}") == ["functionCall"]


@pytest.mark.parametrize("prompt", ["BARECALL NOTOOL", "BARECALL SLOW"])
def test_an_answer_in_words_keeps_its_words(servers: dict[str, ScriptedModelServer], prompt: str) -> None:
    servers["responses"].slow_delay = 0
    assert [item["type"] for item in responses_output(servers["responses"], prompt)] == ["message"]
    plan = servers["responses"].decide(prompt)
    assert plan.chunks and plan.kind in ("plain", "slow")
