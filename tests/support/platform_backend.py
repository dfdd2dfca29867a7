"""A stand-in for the platform's backend on 127.0.0.1, as a runner pod meets it.

It takes the runner's first-turn ``POST /api/projects/<p>/agentic-sessions/<s>/agui/run`` (answering the
statuses it is told to, then ``200 {runId, threadId}``) and, like the real backend (``agui_proxy.go``), then
proxies that run to the runner: ``POST /`` with the backend's headers, every ``data:`` line parsed as one JSON
object with ``threadId``/``runId`` filled in and stored (``stored``), the way its event store keeps them.
Its credential routes (``GET .../credentials/<kind>``, ``/api/ambient/v1/projects/<p>/credentials/<id>/token``)
answer each person's connected accounts (``ConnectedAccounts``) and record every request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def backend_run_headers(session_token: str, user_id: str = "u-1", user_name: str = "Ada") -> dict[str, str]:
    """What the backend sends on ``POST /`` (agui_proxy.go:819-845), in Go's sorted order."""
    return {"Accept": "text/event-stream", "Content-Type": "application/json",
            "X-Ambient-Session-Token": session_token, "X-Caller-Token": "Bearer the-users-own-token",
            "X-Current-User-Id": user_id, "X-Current-User-Name": user_name}


def proxy_run(runner_url: str, session_token: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The backend's proxying of one run: its request, and the events it stores from the answer."""
    stored: list[dict[str, Any]] = []
    with httpx.Client(timeout=httpx.Timeout(120.0, connect=10.0), trust_env=False) as client, client.stream(
            "POST", f"{runner_url}/", json=body, headers=backend_run_headers(session_token)) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.strip().startswith("data: "):  # single-line frames: each data line is one whole event
                event = json.loads(line.strip()[6:])
                event.setdefault("threadId", body["threadId"])
                event.setdefault("runId", body["runId"])
                stored.append(event)
    return stored


@dataclass
class CredentialRequest:
    path: str
    kind: str  # github, jira, mcp/<server>, or id:<credential id> for the CREDENTIAL_IDS route
    headers: dict[str, str]
    user: str  # whose accounts were answered ("" when refused)


class ConnectedAccounts:
    """The backend's credential routes (B/handlers/runtime_credentials.go): each person's accounts, the caller
    tokens it accepts (``Bearer caller-<user>``), the bot token, and statuses to answer instead."""

    def __init__(self, bot_token: str = "bot-token-value") -> None:
        self.bot_token = bot_token
        self.accounts: dict[str, dict[str, Any]] = {}  # user -> kind (or id:<credential id>) -> answer
        self.refuse: dict[str, int] = {}  # kind -> status answered to everybody
        self.expired_callers: set[str] = set()  # users whose caller token is refused (401)
        self.requests: list[CredentialRequest] = []
        self.hang: set[str] = set()  # kinds answered only once ``released`` is set (the backend stops)
        self.released = threading.Event()
        self._lock = threading.Lock()

    def answer(self, path: str, headers: dict[str, str]) -> tuple[int, Any]:
        kind = _credential_kind(path)
        if kind is None:
            return 404, {"error": "not found"}
        auth = headers.get("Authorization", "")
        user = headers.get("X-Runner-Current-User", "")
        if auth.startswith("Bearer caller-"):
            owner = auth.removeprefix("Bearer caller-")
            if owner in self.expired_callers:
                return self._record(path, kind, headers, "", 401, {"error": "Invalid or missing token"})
            user = owner
        elif auth != f"Bearer {self.bot_token}":
            return self._record(path, kind, headers, "", 401, {"error": "Invalid or missing token"})
        if kind in self.hang:
            self.released.wait(60)
        if kind in self.refuse:
            return self._record(path, kind, headers, "", self.refuse[kind], {"error": "refused"})
        answer = self.accounts.get(user or "u-1", {}).get(kind)
        if answer is None:
            return self._record(path, kind, headers, user, 404, {"error": f"{kind} credentials not configured"})
        return self._record(path, kind, headers, user, 200, answer)

    def _record(self, path: str, kind: str, headers: dict[str, str], user: str, status: int,
                body: Any) -> tuple[int, Any]:
        with self._lock:
            self.requests.append(CredentialRequest(path, kind, headers, user))
        return status, body


def _credential_kind(path: str) -> str | None:
    parts = path.split("?", 1)[0].strip("/").split("/")
    if len(parts) >= 7 and parts[:2] == ["api", "projects"] and parts[3] == "agentic-sessions" \
            and parts[5] == "credentials":
        return "/".join(parts[6:])
    if len(parts) == 9 and parts[:5] == ["api", "api", "ambient", "v1", "projects"] and parts[6] == "credentials" \
            and parts[8] == "token":
        return f"id:{parts[7]}"
    return None


class StandInBackend:
    def __init__(self, *, answers: tuple[int, ...] = (), runner_url: str = "", session_token: str = "",
                 before_answer: Callable[[Received], None] | None = None,
                 accounts: ConnectedAccounts | None = None) -> None:
        self.accounts = accounts or ConnectedAccounts()
        self.answers = list(answers)
        self.runner_url = runner_url
        self._runner_known = threading.Event()
        if runner_url:
            self._runner_known.set()
        self.session_token = session_token
        self.before_answer = before_answer
        self.received: list[Received] = []
        self.stored: list[dict[str, Any]] = []
        self.proxied = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/api"

    def start(self) -> StandInBackend:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.accounts.released.set()
        self._server.shutdown()
        self._server.server_close()

    def connect(self, runner_url: str) -> None:
        """Where the runner serves (known only once it is up; a first-turn POST may come before)."""
        self.runner_url = runner_url
        self._runner_known.set()

    def wait_proxied(self, timeout: float = 120.0) -> list[dict[str, Any]]:
        assert self.proxied.wait(timeout), f"no run proxied; received {len(self.received)} first-turn POSTs"
        return self.stored

    def _take(self, received: Received) -> int:
        self.received.append(received)
        if self.before_answer is not None:
            self.before_answer(received)
        return self.answers.pop(0) if self.answers else 200

    def _proxy(self, body: dict[str, Any]) -> None:
        try:
            assert self._runner_known.wait(60), "the test never said where the runner serves"
            self.stored += proxy_run(self.runner_url, self.session_token, body)
        finally:
            self.proxied.set()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                status = backend._take(Received(self.path, dict(self.headers.items()), body))
                answer = json.dumps({"runId": body.get("runId"), "threadId": body.get("threadId")} if status == 200
                                    else {"error": f"refused with HTTP {status}"}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
                if status == 200 and backend.session_token:  # it answers at once and proxies in the background
                    threading.Thread(target=backend._proxy, args=(body,), daemon=True).start()

            def do_GET(self) -> None:  # noqa: N802 - the credential routes
                status, body = backend.accounts.answer(self.path, dict(self.headers.items()))
                answer = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
