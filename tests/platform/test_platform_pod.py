"""The platform plays its part against each real runner (``python main.py``, its real CLI on a scripted model
server): the pod's environment as the operator builds it, the backend's calls exactly as the contract note writes
them (headers included), the UI's body (only the new user message, with ``metadata.senderId``), and what the
backend reads back: single-line ``data:`` frames, ``runId`` echoed, ``MESSAGES_SNAPSHOT`` before the terminal event,
the first turn through a stand-in backend (none with ``IS_RESUME=true``), a between-run listener that gets only
between-run events across reconnects, and exit 0 on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import check_stream
from platform_backend import StandInBackend, backend_run_headers, proxy_run
from platform_pod import ROOT, SESSION, entry_model, operator_env, registry_entry
from runner_process import free_port, wait_ready
from runners import OTHER_CREDENTIALS

from ambient_runner.scripted_models.base import LoggedRequest
from ambient_runner.settings import ACP_IMAGE_AGENTS

RUNNERS = ["gemini-cli", "codex-sdk", "claude", *(f"acp-{agent}" for agent in ACP_IMAGE_AGENTS)]
TOKEN = "agui-token-of-this-session"
ECHO_SERVER = ROOT / "tests" / "mcp" / "echo_server.py"
FIRST_PROMPT = "NOTOOL say hello to the new session"


def requested_model(request: LoggedRequest) -> str | None:
    if isinstance(request.body, dict) and request.body.get("model"):
        return str(request.body["model"])
    if "/models/" in request.path:  # Gemini names the model in the path
        return request.path.split("/models/", 1)[1].split(":", 1)[0]
    return None


class Pod:
    """One runner process with the operator's environment."""

    def __init__(self, runner_type: str, tmp_path: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith(("RUNNER_", "AGUI_", "LLM_", "MCP_")) and k not in OTHER_CREDENTIALS}
        self.proc = subprocess.Popen(
            [sys.executable, "main.py"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=clean | env | {"AGUI_HOST": "127.0.0.1", "AGUI_PORT": str(self.port),
                               "RUNNER_STATE_ROOT": str(tmp_path / "app"), "RUNNER_SHUTDOWN_GRACE": "8"})
        self.output: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)

    def log(self) -> str:
        return "".join(self.output)

    def wait_ready(self) -> None:
        wait_ready(self.url, self.proc, headers={"X-Ambient-Session-Token": TOKEN}, output=self.log)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-Ambient-Session-Token": TOKEN}, timeout=60,
                            trust_env=False)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=40)
        self._reader.join(timeout=5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class BetweenRunListener:
    """The backend's ``ensureBetweenRunListener``: GET /events/<session>, no cursor, every data line stored."""

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.stored: list[dict[str, Any]] = []
        self.connected = threading.Event()
        self.connections = 0

    def until(self, count: int) -> threading.Thread:
        """Connect (once more) and read until ``count`` events in all are stored."""
        self.connected.clear()

        def read() -> None:
            with self.pod.client() as client, client.stream("GET", f"/events/{SESSION}",
                                                            timeout=httpx.Timeout(60)) as response:
                assert response.status_code == 200
                self.connections += 1
                self.connected.set()
                for line in response.iter_lines():
                    if line.strip().startswith("data: "):
                        self.stored.append(json.loads(line.strip()[6:]))
                        if len(self.stored) >= count:
                            return

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        return thread

    def connect_and_wait(self, count: int) -> threading.Thread:
        thread = self.until(count)
        assert self.connected.wait(30), self.pod.log()[-2000:]
        return thread


def ui_body(text: str) -> dict[str, Any]:
    """What the UI sends through the backend: only the new message; the backend adds the sender and a run id."""
    return {"threadId": SESSION, "runId": str(uuid.uuid4()),
            "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": text,
                          "metadata": {"senderId": "u-1", "senderDisplayName": "Ada Lovelace"}}]}


def raw_frames(pod: Pod, body: dict[str, Any]) -> list[str]:
    with httpx.Client(timeout=120, trust_env=False) as client, client.stream(
            "POST", f"{pod.url}/", json=body, headers=backend_run_headers(TOKEN)) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(response.iter_lines())


@pytest.mark.real_cli
@pytest.mark.parametrize("runner_type", RUNNERS)
def test_the_platform_drives_a_session(runner_type, tmp_path, isolated_network):
    entry = registry_entry(runner_type)
    models = [m["value"] for m in entry["models"]]
    scripted = entry_model(runner_type)
    server = scripted.server().start()
    token_file = tmp_path / "bot-token"
    token_file.write_text("bot-token-value")
    backend = StandInBackend(session_token=TOKEN).start()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    custom_mcp = {"custom": {"echo": {"type": "stdio", "command": sys.executable, "args": [str(ECHO_SERVER)]},
                             "leaky": {"type": "http", "url": "https://mcp.example/x",
                                       "headers": {"Authorization": "Bearer literal-secret"}}},
                  "disabled": ["context7"]}
    env = operator_env(runner_type, workspace=workspace, agui_token=TOKEN, backend_api_url=backend.api_url,
                       initial_prompt=FIRST_PROMPT, custom_mcp_servers=custom_mcp, llm_model=models[0],
                       RUNNER_BOT_TOKEN_FILE=str(token_file), **scripted.environment(server))
    pod = Pod(runner_type, tmp_path, env)
    try:
        pod.wait_ready()
        # The first turn: the runner POSTs it to the backend, which proxies it back as a run and stores its events.
        backend.connect(pod.url)
        first = backend.wait_proxied()
        (posted,) = backend.received
        assert posted.path == f"/api/projects/team-a/agentic-sessions/{SESSION}/agui/run"
        assert posted.headers["Authorization"] == "Bearer bot-token-value"
        check_stream(first)
        hidden = posted.body["messages"][0]
        assert first[-2]["type"] == "MESSAGES_SNAPSHOT" and first[-2]["messages"][0] == hidden
        assert first[0]["runId"] == first[-1]["runId"] == posted.body["runId"]

        with pod.client() as client:
            assert httpx.get(f"{pod.url}/health", trust_env=False).status_code == 200  # the probes send no token
            caps = client.get("/capabilities").json()
            assert caps["framework"] == entry["id"] and caps["session_id"] == SESSION
            assert caps["model"] == models[0]  # LLM_MODEL, one of the registry's models
            status = client.get("/mcp/status").json()
            assert [s["name"] for s in status["servers"]] == ["echo"] and status["totalCount"] == 1
            assert status["servers"][0]["status"] in ("connected", "configured")
            assert "MCP server 'leaky' from CUSTOM_MCP_SERVERS is left out" in pod.log()
            assert "literal-secret" not in pod.log()

            # A chat turn from the UI, through the backend: single-line data frames, the run id echoed, a snapshot.
            listener = BetweenRunListener(pod)
            reading = listener.connect_and_wait(1)
            body = ui_body("Create out.txt with hello")
            lines = raw_frames(pod, body)
            assert not [line for line in lines if line.startswith("event:")]
            events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
            check_stream(events)
            assert events[0]["runId"] == events[-1]["runId"] == body["runId"]
            assert [e["type"] for e in events[-2:]] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
            history = events[-2]["messages"]
            assert history[0] == hidden  # the whole conversation: the first turn's messages too
            sent = next(m for m in history if m["id"] == body["messages"][0]["id"])
            assert sent["metadata"] == {"senderId": "u-1", "senderDisplayName": "Ada Lovelace"}
            assert any(m["role"] == "tool" for m in history) and any(m.get("toolCalls") for m in history)
            assert (workspace / "out.txt").exists()

            # The model switch: 200, announced once to the between-run listener, used by the next turn.
            switched = client.post("/model", json={"model": models[1]})
            assert switched.status_code == 200, switched.text
            reading.join(30)
            assert [e["name"] for e in listener.stored] == ["ambient:model_switched"]
            assert listener.stored[0]["value"] == {"previousModel": models[0], "newModel": models[1]}
            before = len(server.requests)
            proxy_run(pod.url, TOKEN, ui_body("NOTOOL which model are you?"))
            turn_requests = [r for r in server.requests[before:] if "which model are you" in json.dumps(r.body)]
            assert turn_requests and {requested_model(r) for r in turn_requests} == {models[1]}
            if runner_type == "claude":  # LLM_MAX_TOKENS, where the CLI takes it
                assert {r.body["max_tokens"] for r in turn_requests} == {4000}
            assert client.post("/model", json={"model": ""}).status_code == 400
            assert client.post("/model", json={"model": "not-offered"}).status_code == 422

            # More reconnects of the listener (the backend has 30 attempts ever): nothing twice, no run events.
            for round_ in range(4):
                reading = listener.connect_and_wait(2 + round_)
                if round_ == 0:  # a run while the listener is connected: none of its events reach it
                    proxy_run(pod.url, TOKEN, ui_body("NOTOOL still there?"))
                assert client.post("/model", json={"model": models[round_ % 2]}).status_code == 200
                reading.join(30)
            assert listener.connections == 5
            assert [e["type"] for e in listener.stored] == ["CUSTOM"] * 5
            assert [e["value"]["newModel"] for e in listener.stored] == [models[1], models[0], models[1],
                                                                           models[0], models[1]]

            feedback = client.post("/feedback", json={"type": "META", "metaType": "thumbs_up", "threadId": SESSION,
                                                      "payload": {"messageId": history[-1]["id"]}})
            assert feedback.status_code == 200 and feedback.json()["event"]["name"] == "ambient:feedback"
        assert pod.stop() == 0, pod.log()[-3000:]  # a drained SIGTERM is a clean stop: Completed, not Failed

        # The pod re-created for the same session (IS_RESUME=true): no first turn again; the conversation goes on.
        again = Pod(runner_type, tmp_path, env | {"IS_RESUME": "true"})
        try:
            again.wait_ready()
            resumed = proxy_run(again.url, TOKEN, ui_body("NOTOOL do you remember?"))
            check_stream(resumed)
            assert resumed[-1]["type"] == "RUN_FINISHED"
            assert len(backend.received) == 1
            assert again.stop() == 0
        finally:
            again.kill()
    finally:
        pod.kill()
        backend.stop()
        server.stop()

