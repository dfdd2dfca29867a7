"""The session token is checked once, before routing: a request without the right token learns nothing about which
paths and methods exist (no 404, 405, 307 or 422), only ``GET /health`` is open, and with the token everything
answers as before, an SSE stream included (streamed as it comes, not buffered by the check)."""

from __future__ import annotations

import httpx
import pytest
from harness import RunnerHarness, check_stream, parse_sse
from process_bridge import FakeCliBridge, script

TOKEN = "the-agui-token-5c1e"
UNKNOWN = ["/nowhere", "/docs", "/redoc", "/docs/oauth2-redirect", "/content/file/", "/health/", "/Health",
           "//health", "/run/", "/RUN", "/events/", "/openapi.json", "/ready", "/.env", "/%2e%2e/etc/passwd"]
REAL = ["/run", "/", "/interrupt", "/capabilities", "/content/file", "/content/list", "/events/t1", "/model",
        "/health"]
METHODS = ["HEAD", "OPTIONS", "PUT", "PATCH", "TRACE", "DELETE", "CONNECT", "PROPFIND"]
WRONG = [{"Authorization": "Bearer nope"}, {"X-Ambient-Session-Token": "nope"}, {"Authorization": TOKEN},
         {"Authorization": f"Basic {TOKEN}"}, {"X-Ambient-Session-Token": ""},
         {"X-Ambient-Session-Token": TOKEN + "x"},
         {"X-Ambient-Session-Token": "nope", "Authorization": f"Bearer {TOKEN}"}]


@pytest.fixture
async def runner(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path), agui_token=TOKEN) as runner:
        yield runner


def assert_refused(response: httpx.Response, what: object) -> None:
    assert response.status_code == 401, (what, response.status_code, response.text)
    assert "location" not in response.headers and "allow" not in response.headers, what
    assert response.headers["content-type"] == "application/json", what
    if response.request.method != "HEAD":
        assert response.json() == {"error": "missing or wrong token (AGUI_TOKEN)", "code": "UNAUTHORIZED"}, what


async def test_without_the_token_every_path_is_401(runner):
    for path in UNKNOWN + REAL[:-1]:
        for method in ("GET", "POST"):
            assert_refused(await runner.client.request(method, path, json={}), (method, path))


async def test_without_the_token_every_method_on_a_real_route_is_401(runner):
    for path in REAL:
        for method in METHODS:
            assert_refused(await runner.client.request(method, path), (method, path))


async def test_a_wrong_token_is_401_everywhere(runner):
    for headers in WRONG:
        for method, path in [("GET", "/docs"), ("GET", "/nowhere"), ("GET", "/content/file/"), ("PUT", "/run"),
                             ("OPTIONS", "/capabilities"), ("POST", "/run"), ("GET", "/openapi.json")]:
            assert_refused(await runner.client.request(method, path, headers=headers), (headers, method, path))


async def test_only_get_health_is_open(runner):
    for path in ("/health", "/health?probe=1"):
        response = await runner.client.get(path)
        assert response.status_code == 200 and response.json()["status"] == "ok", path


async def test_with_the_token_the_api_answers_as_before(runner):
    client = runner.client
    for headers in ({"Authorization": f"Bearer {TOKEN}"}, {"X-Ambient-Session-Token": TOKEN},
                    {"Authorization": "Bearer the-users-own", "X-Ambient-Session-Token": TOKEN}):
        unknown = await client.get("/nowhere", headers=headers)
        assert unknown.status_code == 404 and unknown.json()["code"] == "NOT_FOUND"
        assert (await client.get("/docs", headers=headers)).status_code == 404
        redirect = await client.get("/content/file/", headers=headers)
        assert redirect.status_code == 307 and redirect.headers["location"].endswith("/content/file")
        wrong_method = await client.put("/run", headers=headers)
        assert wrong_method.status_code == 405 and wrong_method.json()["code"] == "METHOD_NOT_ALLOWED"
        assert "POST" in wrong_method.headers["allow"]
        invalid = await client.post("/run", headers=headers, content=b"{")
        assert invalid.status_code == 422 and invalid.json()["code"] == "INVALID_JSON"
        assert (await client.get("/capabilities", headers=headers)).status_code == 200
        assert (await client.get("/openapi.json", headers=headers)).json()["info"]["title"] == "ambient-runner"
        assert (await client.get("/health", headers=headers)).status_code == 200


async def test_without_a_token_setting_nothing_is_asked(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        assert (await runner.client.get("/capabilities")).status_code == 200
        assert (await runner.client.get("/nowhere")).status_code == 404
        assert (await runner.client.request("OPTIONS", "/run")).status_code == 405


async def test_the_stream_is_not_held_back_by_the_check(runner):
    """The first event arrives while the CLI still works (it stalls until interrupted): the check passes the stream
    through as it is sent."""
    runner.client.headers["Authorization"] = f"Bearer {TOKEN}"
    body = runner.run_body("t1", script({"text": "first words"}, {"stall": True}))
    events = []
    async with runner.client.stream("POST", "/run", json=body) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        async for _, event in parse_sse(response.aiter_lines()):
            events.append(event)
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                assert event["delta"] == "first words"
                assert (await runner.interrupt("t1")).status_code == 200  # only now does the run end
    check_stream(events)
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}
