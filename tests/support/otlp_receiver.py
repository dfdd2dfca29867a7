"""A trace backend on 127.0.0.1 for the tests: it takes OTLP/HTTP protobuf exports on any path (decoded with
``opentelemetry-proto``) and Langfuse score posts, and records each request with its path and headers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from http_server import serving
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    resource: dict[str, Any]


@dataclass
class Receiver:
    url: str
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)  # (path, headers lowercased, body)
    spans: list[ReceivedSpan] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200  # what it answers (503: an unreachable backend's stand-in)


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in ("string_value", "bool_value", "int_value", "double_value") else str(value)


def _attributes(items: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in items}


def decode(body: bytes) -> list[ReceivedSpan]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                spans.append(ReceivedSpan(span.name, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(),
                                          _attributes(span.attributes), span.status.code, span.status.message,
                                          resource))
    return spans


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if receiver.status == 200:
                if self.path.endswith("/scores"):
                    receiver.scores.append(json.loads(body))
                else:
                    receiver.spans.extend(decode(body))
            self.send_response(receiver.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        receiver.url = url
        yield receiver
