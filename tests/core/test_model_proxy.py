"""The model proxy against a real scripted model server: the real key goes upstream and only there, the
placeholder is required, nothing but the provider's paths at this proxy is forwarded, upstream answers (errors
included) pass through as they are, and an unreachable upstream is a 502 the run can name."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
from collections.abc import AsyncIterator

import httpx
import pytest

from ambient_runner.model_proxy import ANTHROPIC, GEMINI, OPENAI_RESPONSES, ModelProxy, Upstream
from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer
from ambient_runner.scripted_models.gemini import ScriptedGeminiServer
from ambient_runner.scripted_models.openai_responses import OpenAIResponsesServer

REAL_KEY = "AIzaRealKeyNeverInTheCli-93c1"
STREAM_PATH = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "NOTOOL hi"}]}]}


@pytest.fixture
async def gemini() -> AsyncIterator[tuple[ScriptedGeminiServer, ModelProxy]]:
    server = ScriptedGeminiServer().start()
    proxy = await ModelProxy(Upstream(GEMINI, server.base_url, {"x-goog-api-key": REAL_KEY})).start()
    try:
        yield server, proxy
    finally:
        await proxy.stop()
        server.stop()


async def raw_request(port: int, head: str) -> tuple[int, dict]:
    """A request written by hand (absolute URIs and dot segments that an HTTP client would normalise)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode() + b"\r\n")
    await writer.drain()
    data = await reader.read()
    writer.close()
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1] or b"{}")


async def test_forwards_with_the_real_key_and_streams_back(gemini) -> None:
    server, proxy = gemini
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        response = await client.post(STREAM_PATH, params={"alt": "sse"}, json=GEMINI_BODY,
                                     headers={"x-goog-api-key": proxy.placeholder})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "Hello from the scripted model." in response.text
    seen = server.requests[-1]
    assert seen.path == f"{STREAM_PATH}?alt=sse"
    assert seen.headers["x-goog-api-key"] == REAL_KEY
    assert proxy.placeholder not in json.dumps(seen.headers)
    assert proxy.requests == 1


@pytest.mark.parametrize(("path", "headers", "why"), [
    (STREAM_PATH, {}, "missing or wrong credential"),
    (STREAM_PATH, {"x-goog-api-key": "ambient-proxy-guessed"}, "missing or wrong credential"),
    (STREAM_PATH, {"x-goog-api-key": REAL_KEY}, "missing or wrong credential"),
    ("/v1beta/files", "placeholder", "not a path of the gemini API"),
    ("/admin", "placeholder", "not a path of the gemini API"),
    (STREAM_PATH, "forged-host", "aimed at this proxy"),
])
async def test_refusals_are_403_json(gemini, path: str, headers, why: str) -> None:
    server, proxy = gemini
    if headers == "placeholder":
        headers = {"x-goog-api-key": proxy.placeholder}
    elif headers == "forged-host":
        headers = {"x-goog-api-key": proxy.placeholder, "host": "evil.example"}
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        response = await client.post(path, json=GEMINI_BODY, headers=headers)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "PROXY_FORBIDDEN"
    assert why in response.json()["error"]["message"]
    assert server.requests == []


@pytest.mark.parametrize("target", [
    f"http://evil.example{STREAM_PATH}",  # absolute URI
    f"HTTP://127.0.0.1{STREAM_PATH}",  # absolute URI, this host, the scheme in capitals
    "*",  # asterisk form
    "/v1beta/models/../../admin:generateContent",  # dot segments
    "/v1beta/models/%2e%2e/x:generateContent",  # encoded dot segments
])
async def test_other_hosts_and_dot_segments_are_refused(gemini, target: str) -> None:
    server, proxy = gemini
    port = int(proxy.base_url.rsplit(":", 1)[1])
    status, body = await raw_request(port, f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                           f"x-goog-api-key: {proxy.placeholder}\r\ncontent-length: 0\r\n"
                                           "connection: close\r\n")
    assert status == 403 and body["error"]["code"] == "PROXY_FORBIDDEN"
    assert server.requests == []


@pytest.mark.parametrize("request_line", ["CONNECT evil.example:443 HTTP/1.1", "POST evil.example:443 HTTP/1.1",
                                          "POST /v1beta/models/x:generateContent HTTP/9.9"])
async def test_a_request_line_the_parser_cannot_read_is_a_json_400(gemini, request_line: str) -> None:
    server, proxy = gemini
    port = int(proxy.base_url.rsplit(":", 1)[1])
    status, body = await raw_request(port, f"{request_line}\r\nHost: 127.0.0.1:{port}\r\n"
                                           f"x-goog-api-key: {proxy.placeholder}\r\ncontent-length: 0\r\n")
    assert status == 400 and body["error"]["code"] == "PROXY_BAD_REQUEST", body
    assert server.requests == []


@pytest.mark.parametrize(("mode", "status"), [("error401", 401), ("error429", 429), ("error500", 500)])
async def test_upstream_errors_pass_through_unchanged(gemini, mode: str, status: int) -> None:
    server, proxy = gemini
    server.mode = mode
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        response = await client.post(STREAM_PATH, json=GEMINI_BODY, headers={"x-goog-api-key": proxy.placeholder})
    assert response.status_code == status
    assert response.json() == server.error_body(status)
    if status == 429:
        assert response.headers["retry-after"] == "1"


async def test_a_kept_upstream_connection_serves_the_next_request_and_dies_with_its_server(gemini) -> None:
    """The scripted server keeps its connections alive, as model APIs do, and the proxy reuses them; a stopped server
    closes them too, so the next request is a 502, not an answer from a server that was stopped."""
    server, proxy = gemini
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        for _ in range(2):
            response = await client.post(STREAM_PATH, params={"alt": "sse"}, json=GEMINI_BODY,
                                         headers={"x-goog-api-key": proxy.placeholder})
            assert response.status_code == 200 and "Hello from the scripted model." in response.text
        assert len(server._connections) == 1  # both requests came on the proxy's one kept connection
        server.stop()
        response = await client.post(STREAM_PATH, json=GEMINI_BODY, headers={"x-goog-api-key": proxy.placeholder})
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "UPSTREAM_UNREACHABLE"


async def test_unreachable_upstream_is_a_502_naming_the_host() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proxy = await ModelProxy(Upstream(GEMINI, f"http://127.0.0.1:{port}", {"x-goog-api-key": REAL_KEY})).start()
    try:
        before = asyncio.get_running_loop().time()
        async with httpx.AsyncClient(base_url=proxy.base_url) as client:
            response = await client.post(STREAM_PATH, json=GEMINI_BODY,
                                         headers={"x-goog-api-key": proxy.placeholder})
        assert response.status_code == 502
        assert response.json()["error"]["code"] == "UPSTREAM_UNREACHABLE"
        assert f"127.0.0.1:{port}" in response.json()["error"]["message"]
        assert REAL_KEY not in response.text
        assert proxy.unreachable_since(before) == f"127.0.0.1:{port}"
    finally:
        await proxy.stop()


async def test_openai_and_anthropic_apis() -> None:
    openai = OpenAIResponsesServer().start()
    anthropic = AnthropicScriptedServer().start()
    proxies = [await ModelProxy(Upstream(OPENAI_RESPONSES, f"{openai.base_url}/v1",
                                         {"authorization": "Bearer sk-real-openai"})).start(),
               await ModelProxy(Upstream(ANTHROPIC, anthropic.base_url, {"x-api-key": "sk-ant-real"})).start()]
    try:
        async with httpx.AsyncClient() as client:
            codex = await client.post(f"{proxies[0].base_url}/v1/responses", headers={
                "authorization": f"Bearer {proxies[0].placeholder}"}, json={
                "model": "gpt-5.5", "stream": True, "input": [{"role": "user", "content": "NOTOOL hi"}]})
            claude = await client.post(f"{proxies[1].base_url}/v1/messages", params={"beta": "true"}, headers={
                "x-api-key": proxies[1].placeholder}, json={
                "model": "claude-sonnet-4-5", "max_tokens": 100, "stream": True,
                "messages": [{"role": "user", "content": "NOTOOL hi"}]})
            wrong_api = await client.post(f"{proxies[1].base_url}/v1/responses", headers={
                "x-api-key": proxies[1].placeholder}, json={})
        assert codex.status_code == 200 and claude.status_code == 200, (codex.text, claude.text)
        assert openai.requests[-1].path == "/v1/responses"
        assert openai.requests[-1].headers["authorization"] == "Bearer sk-real-openai"
        assert anthropic.requests[-1].path == "/v1/messages?beta=true"
        assert anthropic.requests[-1].headers["x-api-key"] == "sk-ant-real"
        assert wrong_api.status_code == 403
    finally:
        for proxy in proxies:
            await proxy.stop()
        openai.stop()
        anthropic.stop()


async def test_no_encoding_is_asked_for_that_the_cli_did_not_ask_for(gemini) -> None:
    server, proxy = gemini
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        request = client.build_request("POST", STREAM_PATH, json=GEMINI_BODY,
                                       headers={"x-goog-api-key": proxy.placeholder})
        del request.headers["accept-encoding"]
        await client.send(request)
        await client.post(STREAM_PATH, json=GEMINI_BODY,
                          headers={"x-goog-api-key": proxy.placeholder, "accept-encoding": "gzip"})
    sent = [{k.lower(): v for k, v in q.headers.items()}.get("accept-encoding") for q in server.requests]
    assert sent == ["identity", "gzip"]


class CookieSettingServer(ScriptedGeminiServer):
    """A model API behind a CDN that sets a bot cookie on every answer."""

    def respond(self, method, path, body):
        response = super().respond(method, path, body)
        return dataclasses.replace(response, headers={**response.headers,
                                                      "set-cookie": "__cf_bm=upstream-cookie; Path=/; HttpOnly"})


async def test_the_proxy_keeps_no_cookies_the_cli_gets_them_as_they_came() -> None:
    server = CookieSettingServer().start()
    upstream = f"http://localhost:{server.port}"  # a host name: a cookie jar takes no cookies from an IP address
    proxy = await ModelProxy(Upstream(GEMINI, upstream, {"x-goog-api-key": REAL_KEY})).start()
    try:
        cookie_headers = []
        for own_cookie in (None, None, "cli=own"):  # a new client each time: only the proxy could remember one
            async with httpx.AsyncClient(base_url=proxy.base_url) as client:
                response = await client.post(STREAM_PATH, json=GEMINI_BODY, headers={
                    "x-goog-api-key": proxy.placeholder, **({"cookie": own_cookie} if own_cookie else {})})
            assert response.headers["set-cookie"] == "__cf_bm=upstream-cookie; Path=/; HttpOnly"
            cookie_headers.append([v for k, v in server.requests[-1].headers.items() if k.lower() == "cookie"])
    finally:
        await proxy.stop()
        server.stop()
    assert cookie_headers == [[], [], ["cli=own"]]


def test_the_upstream_host_never_carries_a_password() -> None:
    assert Upstream(GEMINI, "https://user:s3cret@gateway.example:8443/prefix").host == "gateway.example:8443"


async def test_an_answer_clears_an_earlier_failure(gemini) -> None:
    server, proxy = gemini
    real = proxy.upstream
    proxy.upstream = Upstream(GEMINI, "http://127.0.0.1:9", real.headers)  # discard port: refused
    async with httpx.AsyncClient(base_url=proxy.base_url) as client:
        headers = {"x-goog-api-key": proxy.placeholder}
        assert (await client.post(STREAM_PATH, json=GEMINI_BODY, headers=headers)).status_code == 502
        assert proxy.unreachable_since(0) == "127.0.0.1:9"
        proxy.upstream = real
        assert (await client.post(STREAM_PATH, json=GEMINI_BODY, headers=headers)).status_code == 200
    assert proxy.unreachable_since(0) is None


def test_the_upstream_hop_takes_the_environment_proxy_unless_no_proxy_names_the_host(monkeypatch) -> None:
    from ambient_runner.model_proxy.server import _env_proxy

    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert _env_proxy("https://generativelanguage.googleapis.com") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://corp-proxy:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,.internal")
    assert _env_proxy("https://generativelanguage.googleapis.com/v1beta") == "http://corp-proxy:3128"
    assert _env_proxy("https://user:pw@gateway.example:8443/prefix") == "http://corp-proxy:3128"
    assert _env_proxy("https://llm.internal/v1") is None
    assert _env_proxy("http://127.0.0.1:8080") is None  # no HTTP_PROXY, and NO_PROXY names it
