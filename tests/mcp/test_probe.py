"""``GET /mcp-status`` for agents that report nothing of their MCP servers (ACP): the runner connects to each server
as the agent would (``bridges.mcp_probe``). Real MCP servers (``echo_server.py`` on stdio, streamable HTTP and SSE,
on 127.0.0.1) and real failures: a server that exits, one that is missing, one that never answers, one that wants a
login, a port where nothing listens."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import RunnerHarness
from http_server import serving
from process_bridge import FakeCliBridge
from runner_process import free_port

from ambient_runner.bridges.mcp_probe import McpProbe, probe
from ambient_runner.mcp.config import McpConfig, McpServer

ECHO_SERVER = Path(__file__).parent / "echo_server.py"
SECRET = "probe-secret-7e31c0aa"
ENVIRON = {"PROBE_SECRET": SECRET}


def stdio(name: str, *args: str, **env: str) -> McpServer:
    return McpServer(name=name, transport="stdio", command=sys.executable, args=list(args), env=env)


def python(code: str) -> list[str]:
    return ["-c", code]


@contextlib.contextmanager
def echo_over(transport: str) -> Iterator[str]:
    """The echo server on ``transport`` (streamable-http, sse) at a free loopback port: its base URL once it
    listens."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(ECHO_SERVER), transport, str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                httpx.get(url, timeout=1, trust_env=False)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the echo server did not listen"
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(10)


async def test_a_stdio_server_that_answers_is_connected_with_its_tools(tmp_path: Path) -> None:
    """Started with its ``${VAR}`` reference resolved (else it exits at once)."""
    checked = (f"import os, runpy, sys; assert os.environ['ECHO_SECRET'] == {SECRET!r}; "
               f"sys.argv = [{str(ECHO_SERVER)!r}]; runpy.run_path(sys.argv[0], run_name='__main__')")
    server = stdio("echo", *python(checked), ECHO_SECRET="${PROBE_SECRET}")
    status = await probe(server, ENVIRON, dict(os.environ), tmp_path)
    assert status.wire() == {"name": "echo", "transport": "stdio", "status": "connected", "tools": ["say"],
                             "source": "runner probe"}


async def test_a_server_that_exits_is_failed_with_its_last_words_and_no_secret(tmp_path: Path) -> None:
    code = "import os, sys; print('cannot log in with', os.environ['TOKEN'], file=sys.stderr); sys.exit(3)"
    server = stdio("broken", *python(code), TOKEN="${PROBE_SECRET}")
    status = await probe(server, ENVIRON, dict(os.environ), tmp_path)
    assert status.status == "failed" and status.tools is None
    assert status.detail is not None and "exited (code 3)" in status.detail, status.detail
    assert "cannot log in with [redacted]" in status.detail
    assert SECRET not in status.model_dump_json()


async def test_a_missing_command_or_folder_is_named(tmp_path: Path) -> None:
    missing = McpServer(name="gone", transport="stdio", command="no-such-mcp-server-here")
    status = await probe(missing, {}, dict(os.environ), tmp_path)
    assert (status.status, status.detail) == ("failed", "its command 'no-such-mcp-server-here' was not found or is "
                                                        "not executable")
    elsewhere = McpServer(name="gone", transport="stdio", command=sys.executable, cwd=str(tmp_path / "nowhere"))
    status = await probe(elsewhere, {}, dict(os.environ), tmp_path)
    assert status.status == "failed" and status.detail == f"its folder '{tmp_path / 'nowhere'}' does not exist"


async def test_a_server_that_never_answers_is_failed_in_its_bound_and_its_process_ends(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    status = await probe(stdio("silent", *python(code)), {}, dict(os.environ), tmp_path, bound=1.0)
    assert (status.status, status.detail) == ("failed", "it did not answer within 1 s")
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # stopped and reaped with the probe
        os.kill(pid, 0)


@pytest.mark.parametrize(("transport", "path", "kind"), [("streamable-http", "/mcp", "http"), ("sse", "/sse", "sse")])
async def test_a_remote_server_that_answers_is_connected(transport: str, path: str, kind: str, tmp_path: Path) -> None:
    with echo_over(transport) as url:
        server = McpServer(name="remote", transport=kind, url=f"{url}{path}")  # type: ignore[arg-type]
        status = await probe(server, {}, {}, tmp_path)
    assert (status.status, status.tools, status.detail) == ("connected", ["say"], None)


class WantsLogin(BaseHTTPRequestHandler):
    seen: list[str | None] = []

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        WantsLogin.seen.append(self.headers.get("Authorization"))
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


async def test_a_remote_server_that_wants_a_login_needs_auth_and_got_the_configured_header(tmp_path: Path) -> None:
    with serving(WantsLogin) as url:
        server = McpServer(name="login", transport="http", url=f"{url}/mcp",
                           headers={"Authorization": "Bearer ${PROBE_SECRET}"})
        status = await probe(server, ENVIRON, {}, tmp_path)
    assert (status.status, status.detail) == ("needs-auth", "it answered HTTP 401: it wants credentials")
    assert WantsLogin.seen == [f"Bearer {SECRET}"]


async def test_a_port_where_nothing_listens_is_failed(tmp_path: Path) -> None:
    server = McpServer(name="nobody", transport="http", url=f"http://127.0.0.1:{free_port()}/mcp")
    status = await probe(server, {}, {}, tmp_path)
    assert status.status == "failed" and status.detail is not None
    assert status.detail.startswith("it could not be reached: ConnectError"), status.detail


async def test_the_report_waits_a_bounded_time_then_shows_pending_and_keeps_what_it_found(tmp_path: Path) -> None:
    """A slow server is ``pending`` when the caller's wait is over, and ``connected`` on a later call (its probe
    went on); a report is kept, not made again on every call."""
    starts = tmp_path / "starts"
    slow = ("import runpy, sys, time; open(sys.argv[1], 'a').write('x'); time.sleep(1.5); "
            f"sys.argv = [{str(ECHO_SERVER)!r}]; runpy.run_path(sys.argv[0], run_name='__main__')")
    config = McpConfig(servers={"slow": stdio("slow", *python(slow), str(starts)),
                                "broken": stdio("broken", *python("raise SystemExit(2)"))})
    mcp_probe = McpProbe(wait=0.3, keep=600)
    try:
        first = {s["name"]: s["status"] for s in await mcp_probe.status(config, dict, lambda: dict(os.environ),
                                                                          tmp_path)}
        assert first["slow"] == "pending"
        mcp_probe.rounds.wait = 60
        later = await mcp_probe.status(config, dict, lambda: dict(os.environ), tmp_path)
        again = await mcp_probe.status(config, dict, lambda: dict(os.environ), tmp_path)
    finally:
        await mcp_probe.close()
    assert [(s["name"], s["status"], s.get("tools")) for s in later] == [("slow", "connected", ["say"]),
                                                                       ("broken", "failed", None)]
    assert again == later and starts.read_text() == "x"  # kept: one round of probes for the three calls


async def test_no_servers_no_probe(tmp_path: Path) -> None:
    assert await McpProbe().status(McpConfig(), dict, dict, tmp_path) == []


# A stdio server written out by hand: a line of its own logging first, a ping of its own before its tools' answer,
# an older protocol version, and its tools in two pages.
HANDWRITTEN = """
import json, sys
print("starting up", flush=True)
for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    def answer(result):
        print(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}), flush=True)
    if method == "initialize":
        answer({"protocolVersion": "2025-03-26", "capabilities": {"tools": {}}, "serverInfo": {"name": "hand"}})
    elif method == "tools/list" and "cursor" not in message["params"]:
        print(json.dumps({"jsonrpc": "2.0", "id": "its-ping", "method": "ping"}), flush=True)
        pong = json.loads(sys.stdin.readline())
        assert pong == {"jsonrpc": "2.0", "id": "its-ping", "result": {}}, pong
        answer({"tools": [{"name": "first"}], "nextCursor": "page-2"})
    elif method == "tools/list":
        answer({"tools": [{"name": "second"}, {"nameless": True}]})
"""


async def test_logging_lines_its_own_requests_and_every_page_of_tools(tmp_path: Path) -> None:
    status = await probe(stdio("hand", *python(HANDWRITTEN)), {}, dict(os.environ), tmp_path)
    assert (status.status, status.tools, status.detail) == ("connected", ["first", "second"], None)


class OlderHttpServer(BaseHTTPRequestHandler):
    """Streamable HTTP on an older protocol version: later requests must carry the version it chose; its tools
    answer comes as an event stream, after a ping of its own (answered by a POST of the probe's)."""

    headers_seen: list[dict[str, str]] = []
    pinged: list[object] = []

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        OlderHttpServer.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        if message.get("id") == "its-ping":
            OlderHttpServer.pinged.append(message)
            return self._send(202, b"", "application/json")
        if message.get("method") == "initialize":
            body = {"jsonrpc": "2.0", "id": message["id"],
                    "result": {"protocolVersion": "2025-03-26", "capabilities": {}, "serverInfo": {"name": "old"}}}
            return self._send(200, json.dumps(body, indent=2).encode(), "application/json", session="s-1")
        if "id" not in message:
            return self._send(202, b"", "application/json")
        if self.headers.get("MCP-Protocol-Version") != "2025-03-26" or self.headers.get("Mcp-Session-Id") != "s-1":
            return self._send(400, b"", "application/json")
        result = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [{"name": "old-tool"}]}}
        ping = {"jsonrpc": "2.0", "id": "its-ping", "method": "ping"}
        stream = f"event: message\ndata: {json.dumps(ping)}\n\ndata: {json.dumps(result)}\n\n".encode()
        self._send(200, stream, "text/event-stream")

    def do_DELETE(self) -> None:  # noqa: N802
        self._send(200, b"", "application/json")

    def _send(self, code: int, body: bytes, kind: str, session: str | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        if session:
            self.send_header("Mcp-Session-Id", session)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


async def test_an_http_server_on_an_older_version_gets_its_version_back_and_its_ping_answered(tmp_path: Path) -> None:
    with serving(OlderHttpServer) as url:
        status = await probe(McpServer(name="old", transport="http", url=f"{url}/mcp"), {}, {}, tmp_path)
    assert (status.status, status.tools, status.detail) == ("connected", ["old-tool"], None)
    assert OlderHttpServer.pinged == [{"jsonrpc": "2.0", "id": "its-ping", "result": {}}]


class ElsewhereSse(BaseHTTPRequestHandler):
    """An SSE server that names a message endpoint on another host."""

    posts: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: http://127.0.0.2:9/messages\n\n")
        self.wfile.flush()

    def do_POST(self) -> None:  # noqa: N802
        ElsewhereSse.posts.append(self.path)

    def log_message(self, *args: object) -> None:
        pass


async def test_an_sse_endpoint_on_another_origin_never_gets_the_headers(tmp_path: Path) -> None:
    with serving(ElsewhereSse) as url:
        server = McpServer(name="far", transport="sse", url=f"{url}/sse", headers={"Authorization": "${PROBE_SECRET}"})
        status = await probe(server, ENVIRON, {}, tmp_path, bound=10)
    assert (status.status, status.detail) == ("failed", "it named a message endpoint on another origin")


async def test_closing_ends_a_round_under_way_and_its_servers(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    config = McpConfig(servers={"silent": stdio("silent", *python(code))})
    mcp_probe = McpProbe(wait=0.01)
    first = await mcp_probe.status(config, dict, lambda: dict(os.environ), tmp_path)
    assert [s["status"] for s in first] == ["pending"]
    while not pid_file.exists() or not pid_file.read_text():  # the server has started
        await asyncio.sleep(0.01)
    await mcp_probe.close()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
    after = await mcp_probe.status(config, dict, lambda: dict(os.environ), tmp_path)
    assert [s["status"] for s in after] == ["configured"]  # nothing is started once the runner stops


async def test_an_environment_that_cannot_be_prepared_is_said_for_every_server(tmp_path: Path) -> None:
    def broken() -> dict[str, str]:
        raise OSError("no room")

    config = McpConfig(servers={"a": stdio("a", str(ECHO_SERVER)), "b": stdio("b", str(ECHO_SERVER))})
    report = await McpProbe().status(config, dict, broken, tmp_path)
    assert {(s["name"], s["status"], s["detail"]) for s in report} == {
        (name, "failed", "the runner could not prepare the agent's environment: OSError") for name in "ab"}


class TalkativeServers(FakeCliBridge):
    """A bridge whose servers' detail holds one of the runner's secrets."""

    async def mcp_status(self) -> list[dict[str, Any]]:
        return [{"name": "x", "transport": "stdio", "status": "failed", "detail": f"rejected key {SECRET}",
                 "source": "test"}, {"name": "y", "transport": "stdio", "status": "configured"}]


async def test_a_servers_detail_never_shows_a_runner_secret(tmp_path: Path) -> None:
    async with RunnerHarness(TalkativeServers(tmp_path, secrets=(SECRET,))) as runner:
        assert runner.client is not None
        ours = (await runner.client.get("/mcp-status")).json()["servers"]
        platforms = (await runner.client.get("/mcp/status")).json()["servers"]
    assert ours[0]["detail"] == platforms[0]["detail"] == "rejected key [REDACTED]"
    assert "detail" not in ours[1]
