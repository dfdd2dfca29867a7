"""The model proxy's ``openai-chat`` API (OpenAI Chat Completions, for ACP agents such as opencode and Qwen Code)
against the scripted Chat Completions server: the real key reaches the upstream and nothing else does, the agent's
placeholder is required and never forwarded, no answer carries the key, a stream is relayed chunk by chunk as the
model writes it, and only the API's own paths pass."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from ambient_runner.model_proxy import OPENAI_CHAT, ModelProxy, Upstream
from ambient_runner.scripted_models.openai_chat import OpenAIChatServer
from tests.core.test_scripted_openai_chat import OPENCODE_BASH, parse_stream

REAL_KEY = "sk-real-openai-chat-key-4d1e9b"


@pytest.fixture
async def chat() -> AsyncIterator[tuple[OpenAIChatServer, ModelProxy]]:
    server = OpenAIChatServer().start()
    proxy = await ModelProxy(Upstream(OPENAI_CHAT, f"{server.base_url}/v1",
                                      {"authorization": f"Bearer {REAL_KEY}"})).start()
    try:
        yield server, proxy
    finally:
        await proxy.stop()
        server.stop()


def body(prompt: str, **extra: object) -> dict[str, object]:
    return {"model": "qwen3-coder-plus", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": prompt}], "tools": [OPENCODE_BASH], **extra}


async def test_the_key_goes_upstream_only_and_the_call_comes_back(chat) -> None:
    server, proxy = chat
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        response = await client.post("/v1/chat/completions", json=body("Create out.txt with hello"),
                                     headers={"authorization": f"Bearer {proxy.placeholder}"})
    assert response.status_code == 200, response.text
    streamed = parse_stream(iter(response.text.splitlines()))
    assert [(c["name"], c["arguments"]["command"]) for c in streamed.calls] == [("bash", "echo hello > out.txt")]
    assert streamed.usage is not None and streamed.done
    seen = server.requests[-1]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {REAL_KEY}"
    assert proxy.placeholder not in json.dumps(seen.headers)
    assert REAL_KEY not in response.text and REAL_KEY not in json.dumps(dict(response.headers))
    assert proxy.secrets() == [REAL_KEY]


async def test_models_and_errors_pass_through_without_the_key(chat) -> None:
    server, proxy = chat
    headers = {"authorization": f"Bearer {proxy.placeholder}"}
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        models = await client.get("/v1/models", headers=headers)
        card = await client.get("/v1/models/gpt-4.1", headers=headers)
        server.mode = "error401"
        refused = await client.post("/v1/chat/completions", json=body("hi"), headers=headers)
    assert models.status_code == 200 and "gpt-4.1" in [m["id"] for m in models.json()["data"]]
    assert [r.path for r in server.requests[:2]] == ["/v1/models", "/v1/models/gpt-4.1"]
    assert card.status_code == 404  # the scripted server has no model cards: its own answer, passed on
    assert refused.status_code == 401 and refused.json() == server.error_body(401)
    assert all(REAL_KEY not in r.text for r in (models, card, refused))


@pytest.mark.parametrize(("method", "path", "credential"), [
    ("POST", "/v1/chat/completions", None),
    ("POST", "/v1/chat/completions", REAL_KEY),  # the real key from the agent's side is not the placeholder
    ("POST", "/v1/responses", "placeholder"),  # another API's path
    ("POST", "/v1/embeddings", "placeholder"),
    ("POST", "/v1/files", "placeholder"),
    ("POST", "/chat/completions", "placeholder"),  # without the /v1 prefix
])
async def test_only_its_paths_with_the_placeholder_pass(chat, method: str, path: str, credential: str | None) -> None:
    server, proxy = chat
    headers = {"authorization": f"Bearer {proxy.placeholder if credential == 'placeholder' else credential}"}
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        response = await client.request(method, path, json=body("hi"),
                                        headers=headers if credential is not None else {})
    assert response.status_code == 403 and response.json()["error"]["code"] == "PROXY_FORBIDDEN"
    assert server.requests == []


async def test_a_stream_is_relayed_chunk_by_chunk(chat) -> None:
    """SLOW: a chunk every 0.3 s. Each must reach the agent as the model sends it, not when the answer ends."""
    server, proxy = chat
    server.slow_chunks, server.slow_delay = 4, 0.3
    arrivals: list[tuple[float, str]] = []
    async with httpx.AsyncClient(base_url=proxy.base_url, timeout=30) as client, client.stream(
            "POST", "/v1/chat/completions", json=body("SLOW"),
            headers={"authorization": f"Bearer {proxy.placeholder}"}) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                arrivals.append((time.monotonic(), line))
    streamed = parse_stream(iter(line for _, line in arrivals))
    assert streamed.text == "".join(f"slow chunk {i}. " for i in range(4)) and streamed.done
    texts = [at for at, line in arrivals if '"content": "slow chunk' in line]
    assert len(texts) == 4
    gaps = [later - earlier for earlier, later in zip(texts, texts[1:], strict=False)]
    assert all(gap > 0.2 for gap in gaps), gaps  # one by one, as written: never gathered into one read
