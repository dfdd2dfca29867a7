"""The scripted model providers' common server: a small HTTP server on loopback that logs every request and
answers from a script derived from the request (stateless), so the real CLIs run with no API key and no
internet. It is the runner's offline default (``RUNNER_SCRIPTED_MODEL=true``) and the tests' model server.

Script, decided from the latest user turn of each request (``decide``):

* the latest user turn carries a tool result      -> the final answer, streamed as 3 text chunks (``REFUSED_ANSWER``
                                                     when the result says a person refused the call);
* the prompt holds a person's words after a refusal (``REFUSAL_NOTE``) -> ``REFUSED_ANSWER``, in
                                                     words: the same call is never made again;
* the prompt contains ``NOTOOL``                  -> a plain answer in 2 chunks, no tool call;
* the prompt contains ``SLOW``                    -> ``slow_chunks`` chunks, ``slow_delay`` s apart;
* the prompt contains ``THINK``                   -> a reasoning part first (where the API has one);
* the prompt contains ``PATCH``                   -> an apply_patch-style file edit (Codex only);
* the prompt contains ``BACKGROUND``              -> a shell command run in the background (Claude's
                                                     ``run_in_background``): ``background_command``;
* the prompt is Claude's ``<task-notification>``  -> ``TASK_NOTED`` (a background task ended);
* the prompt contains ``SUBAGENT``                -> a foreground call of Claude's sub-agent tool (``Agent``) whose
                                                     prompt, ``subagent_prompt``, makes the sub-agent run the shell
                                                     command (plain text elsewhere);
* the prompt contains ``MCPTOOL:<server>.<tool>`` -> a call to that MCP tool;
* the prompt contains ``UPDATEPLAN``              -> Codex's ``update_plan`` with ``PLAN_STEPS`` (plain text elsewhere);
* the prompt contains ``QUESTION``                -> a question to the person, ``QUESTION`` with its options (Claude's
                                                     ``AskUserQuestion``, Codex's ``request_user_input``; plain
                                                     text for Gemini);
* otherwise                                       -> one shell tool call running ``shell_command``;
* ``BARECALL`` with any of the calls above        -> the call alone, no text before it (a model whose only output
                                                     is the call, as GPT-5-class models often answer).

``mode`` switches the whole server to a failure at run time: ``error401``, ``error429``, ``error500``,
``hang`` (accept, never answer), ``drop`` (close the connection mid-stream), ``garbage`` (malformed SSE).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The words the runner puts before a person's reason for refusing a call (``interrupts.book.refusal_note``). Written
# here too: the scripted model stands in for the provider and imports nothing of the runner (the layers in pyproject).
REFUSAL_NOTE = "I refused that request."
ERROR_MODES = {"error401": 401, "error429": 429, "error500": 500, "error400": 400}
FINAL_ANSWER = ["Done: I ran the command", " and checked the result.", " All good."]
PLAIN_ANSWER = ["Hello from the scripted model.", " No tools were needed."]
REFUSED_ANSWER = ["Understood: that did not run.", " Tell me what to do instead."]
# What a CLI's tool result says when a person refused the call: Codex "rejected", Gemini "canceled by the user",
# Claude the runner's deny message.
REFUSED_RESULT = re.compile(r"refus|declin|reject|denied|cancell?ed", re.IGNORECASE)
TASK_NOTED = ["Noted: the background task has finished."]
PLAN_STEPS = [{"step": "Read the code", "status": "completed"}, {"step": "Make the change", "status": "in_progress"},
              {"step": "Run the tests", "status": "pending"}]
QUESTION = {"question": "Which colour should the file use?", "header": "Colour", "multiSelect": False,
            "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}
MCP_PATTERN = re.compile(r"MCPTOOL:([\w-]+)\.([\w-]+)")
ANSWERS = {"final", "plain", "slow"}  # the plans that answer in words, without a call


@dataclass(frozen=True)
class Plan:
    """What the scripted model answers to one request."""

    kind: str  # "final" | "plain" | "slow" | "tool" | "patch" | "mcp"
    chunks: list[str] = field(default_factory=list)
    think: bool = False
    mcp_server: str = ""
    mcp_tool: str = ""
    mcp_found: str = ""  # the tool's name as a search for it returned (called through the agent's bridge tool)


class RawData(str):
    """An SSE payload written as it is, not as JSON (OpenAI Chat Completions' closing ``data: [DONE]``)."""


@dataclass
class ScriptedResponse:
    status: int = 200
    json_body: Any = None
    sse: Iterator[tuple[str | None, Any]] | None = None  # (event name or None, JSON payload or RawData)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class ScriptedModelServer:
    """Base class: subclasses implement ``respond`` (and ``error_body``) for one model API."""

    name = "scripted"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.mode = "ok"
        self.shell_command = "echo hello > out.txt"
        # When set, the tool call reads this file with the CLI's own file tool instead (Claude's Read, Gemini's
        # read_file; Codex has no file tool: its call stays the shell).
        self.read_path: str | None = None
        self.background_command = "sleep 1; echo background done"
        self.subagent_prompt = "Sub-task: check the workspace with a shell command."
        self.slow_chunks = 30
        self.slow_delay = 1.0
        self.chunk_delay = 0.0
        self.requests: list[LoggedRequest] = []
        # The newest requests kept (SCRIPTED_MODEL_KEEP_REQUESTS; unset: all, as the tests read them): a long thread
        # sends its whole history with every request, so keeping them all grows with the square of its turns.
        keep = os.environ.get("SCRIPTED_MODEL_KEEP_REQUESTS", "").strip()
        self.keep_requests = int(keep) if keep.isdigit() else None
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()  # kept alive between requests: closed by ``stop``
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ----- lifecycle -------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedModelServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=f"{self.name}-server",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """No new connection, and every open one closed (a kept-alive connection would go on being answered)."""
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            open_now = list(self._connections)
        for connection in open_now:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- script ----------------------------------------------------------------------------------------
    def decide(self, prompt: str, tool_results: Sequence[Any] = ()) -> Plan:
        """The answer to a request whose latest user turn is ``prompt``, or which ends with ``tool_results``;
        ``BARECALL``: a call with no text before it."""
        plan = self._decide(prompt, tool_results)
        if "BARECALL" in prompt and plan.kind not in ANSWERS:
            return replace(plan, chunks=[])
        return plan

    def _decide(self, prompt: str, tool_results: Sequence[Any]) -> Plan:
        think = "THINK" in prompt
        if tool_results:
            refused = REFUSED_RESULT.search(json.dumps(list(tool_results), default=str))
            return Plan("final", list(REFUSED_ANSWER if refused else FINAL_ANSWER), think=False)
        if REFUSAL_NOTE in prompt:  # a person's words after refusing a call: answered, never the call again
            return Plan("plain", list(REFUSED_ANSWER), think=think)
        if "SLOW" in prompt:
            return Plan("slow", [f"slow chunk {i}. " for i in range(self.slow_chunks)], think=think)
        if "NOTOOL" in prompt:
            return Plan("plain", list(PLAIN_ANSWER), think=think)
        mcp = MCP_PATTERN.search(prompt)
        if mcp:
            return Plan("mcp", ["I will call the MCP tool."], think=think, mcp_server=mcp.group(1),
                        mcp_tool=mcp.group(2))
        if "PATCH" in prompt:
            return Plan("patch", ["I will edit a file."], think=think)
        if "BACKGROUND" in prompt:
            return Plan("background", ["I will run that in the background."], think=think)
        if "<task-notification>" in prompt:  # Claude telling the model that a background task ended
            return Plan("plain", list(TASK_NOTED), think=think)
        if "UPDATEPLAN" in prompt:
            return Plan("update_plan", ["I will plan first."], think=think)
        if "SUBAGENT" in prompt:
            return Plan("subagent", ["I will ask a sub-agent."], think=think)
        if "QUESTION" in prompt:
            return Plan("question", ["I need to ask you something."], think=think)
        return Plan("tool", ["I will run a shell command."], think=think)

    def chunk_pause(self, plan: Plan) -> float:
        return self.slow_delay if plan.kind == "slow" else self.chunk_delay

    # ----- to implement ----------------------------------------------------------------------------------
    def respond(self, method: str, path: str, body: Any) -> ScriptedResponse:
        raise NotImplementedError

    def error_body(self, status: int) -> Any:
        return {"error": {"code": status, "message": f"scripted error {status}"}}

    # ----- request log -----------------------------------------------------------------------------------
    def log(self, request: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            if self.keep_requests is not None and len(self.requests) > self.keep_requests:
                del self.requests[:len(self.requests) - self.keep_requests]

    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests]

    # ----- HTTP ------------------------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # each chunk goes out at once (a kept-alive connection is never closed)

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                super().finish()

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                server.log(LoggedRequest(method, self.path, dict(self.headers.items()), body))
                mode = server.mode
                if mode == "hang":
                    time.sleep(3600)
                    return
                if mode in ERROR_MODES:
                    status = ERROR_MODES[mode]
                    extra = {"retry-after": "1"} if status == 429 else {}
                    self._send_json(status, server.error_body(status), extra | {"x-should-retry": "false"})
                    return
                try:
                    response = server.respond(method, self.path, body)
                except Exception as exc:  # a bug in a script must not hang the CLI
                    self._send_json(500, {"error": {"code": 500, "message": f"scripted server bug: {exc}"}})
                    return
                if response.sse is None:
                    self._send_json(response.status, response.json_body, response.headers)
                else:
                    self._send_sse(response, mode)

            def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_sse(self, response: ScriptedResponse, mode: str) -> None:
                """The stream in chunks, the connection kept alive after it (as a real model API keeps it)."""
                self.send_response(response.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                assert response.sse is not None
                try:
                    for index, (event, payload) in enumerate(response.sse):
                        if mode == "drop" and index == 2:
                            self.close_connection = True
                            self.connection.shutdown(socket.SHUT_RDWR)
                            return
                        if mode == "garbage" and index == 1:
                            self._chunk(b"data: {not json\r\n\r\n")
                        prefix = f"event: {event}\n" if event else ""
                        data = payload if isinstance(payload, RawData) else json.dumps(payload)
                        self._chunk(f"{prefix}data: {data}\n\n".encode())
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self.close_connection = True

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

        return Handler


def sleep_between(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)
