"""The benchmarks' light client of ``POST /run`` (``bench/common.RunClient``): SSE lines split across chunks come out
whole, one connection serves run after run, a refusal raises with its body, and a response left half-read costs the
next run a new connection, not a corrupt one."""

from __future__ import annotations

import json
import select
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from http_server import serving

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from common import RunClient, run_events  # noqa: E402

RUN = [{"type": "RUN_STARTED"}, {"type": "TEXT_MESSAGE_CONTENT", "delta": "héllo\nwörld"}, {"type": "RUN_FINISHED"}]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    peers: list[int] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.peers.append(self.client_address[1])
        if body.get("threadId") == "busy":
            data = json.dumps({"error": {"code": "THREAD_BUSY"}}).encode()
            self.send_response(409)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.close_connection = body.get("threadId") == "then-close"  # closed after it, unannounced (idle timeout)
        run = [RUN[0], {"type": "RUN_ERROR", "message": "boom"}, *RUN[1:]] if body.get("threadId") == "error" else RUN
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        stream = "".join(f"id: {n}\r\ndata: {json.dumps(e, ensure_ascii=False)}\r\n\r\n"
                         for n, e in enumerate(run)).encode()
        for start in range(0, len(stream), 7):  # chunks that cut lines (and a multi-byte character) apart
            piece = stream[start:start + 7]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def server() -> Iterator[str]:
    Handler.peers = []
    with serving(Handler) as url:
        yield url


def test_lines_come_out_whole_and_one_connection_serves_every_run(server: str) -> None:
    with RunClient(server, timeout=10) as client:
        for _ in range(3):
            events = [json.loads(line[5:]) for _, line in run_events(client, server, {"threadId": "t"})]
            assert events == RUN
    assert len(Handler.peers) == 3 and len(set(Handler.peers)) == 1


def test_a_connection_the_runner_closed_is_not_reused(server: str) -> None:
    with RunClient(server, timeout=10) as client:
        events = [json.loads(line[5:]) for _, line in run_events(client, server, {"threadId": "then-close"})]
        assert events == RUN
        assert client._sock is not None
        readable, _, _ = select.select([client._sock], [], [], 10)  # the server's close has reached the client
        assert readable
        events = [json.loads(line[5:]) for _, line in run_events(client, server, {"threadId": "t"})]
        assert events == RUN
    assert len(set(Handler.peers)) == 2


def test_a_run_that_ends_in_an_error_leaves_no_half_read_response(server: str) -> None:
    with RunClient(server, timeout=10) as client:
        with pytest.raises(RuntimeError, match="RUN_ERROR"):
            list(run_events(client, server, {"threadId": "error"}))
        events = [json.loads(line[5:]) for _, line in run_events(client, server, {"threadId": "t"})]
    assert events == RUN


def test_a_refusal_raises_with_its_body(server: str) -> None:
    with RunClient(server, timeout=10) as client, pytest.raises(RuntimeError, match="409.*THREAD_BUSY"):
        list(run_events(client, server, {"threadId": "busy"}))


def test_a_response_left_half_read_costs_a_new_connection(server: str) -> None:
    with RunClient(server, timeout=10) as client:
        lines = client.post_lines("/run", {"threadId": "t"})
        next(lines)
        lines.close()  # the rest of the response is never read
        events = [json.loads(line[5:]) for _, line in run_events(client, server, {"threadId": "t"})]
    assert events == RUN
    assert len(set(Handler.peers)) == 2
