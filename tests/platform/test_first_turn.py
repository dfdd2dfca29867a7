"""The session's first turn on the platform: the runner POSTs INITIAL_PROMPT to the backend (a stand-in on
127.0.0.1) as a hidden user message with the bot token read fresh, retries what the reference retries, and the
backend's proxied run of it carries the message (with its metadata) in its MESSAGES_SNAPSHOT. IS_RESUME=true: no
POST. These run the real service with the fake CLI; tests/platform/test_platform_pod.py does it with the real CLIs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness import RunnerHarness, check_stream
from platform_backend import Received, StandInBackend
from process_bridge import FakeCliBridge, script
from runners import wait_for

from ambient_runner.bridges.contract import StateFiles

SESSION = "session-1f2e"
PROJECT = "team-a"
TOKEN = "agui-session-token"  # what the stand-in backend sends; these runners do not check one
PROMPT = script({"text": "started through the backend"})


def platform_settings(backend: StandInBackend, token_file: Path, **more) -> dict:
    return {"backend_api_url": backend.api_url, "project_name": PROJECT, "session_id": SESSION,
            "initial_prompt": PROMPT, "runner_bot_token_file": token_file,
            "runner_first_turn_backoff": 0.01} | more


async def test_first_turn_goes_through_the_backend_with_a_fresh_token_and_retries(tmp_path):
    token_file = tmp_path / "bot-token"
    token_file.write_text("bot-token-1\n")

    def rotate(_: Received) -> None:  # kubelet refreshes the mounted token between two attempts
        token_file.write_text("bot-token-2")

    backend = StandInBackend(answers=(503, 401), session_token=TOKEN, before_answer=rotate).start()
    try:
        async with RunnerHarness(FakeCliBridge(tmp_path), **platform_settings(backend, token_file)) as runner:
            backend.connect(runner.base_url)
            stored = await asyncio.to_thread(backend.wait_proxied)
            marker = runner.settings.state_dir / ".ambient-initial-prompt-started"
            await wait_for(marker.exists, what="the first turn marked as started")
    finally:
        backend.stop()
    assert [r.path for r in backend.received] == [f"/api/projects/{PROJECT}/agentic-sessions/{SESSION}/agui/run"] * 3
    assert [r.headers["Authorization"] for r in backend.received] == [
        "Bearer bot-token-1", "Bearer bot-token-2", "Bearer bot-token-2"]
    bodies = [r.body for r in backend.received]
    (message,) = bodies[0]["messages"]
    assert message == {"id": message["id"], "role": "user", "content": PROMPT,
                       "metadata": {"hidden": True, "autoSent": True, "source": "runner_initial_prompt"}}
    assert all(b["messages"] == [message] and b["threadId"] == SESSION for b in bodies)  # the same message
    assert len({b["runId"] for b in bodies}) == 3  # a new run id per attempt
    # The backend proxied the accepted run to the runner: its events, as the backend stores them.
    check_stream(stored)
    assert stored[0]["runId"] == stored[-1]["runId"] == bodies[-1]["runId"]
    snapshot = stored[-2]
    assert snapshot["type"] == "MESSAGES_SNAPSHOT"
    assert snapshot["messages"][0] == message  # hidden stays hidden in the history the platform keeps
    assert any(e.get("delta") == "started through the backend" for e in stored)


async def test_a_final_refusal_is_not_retried(tmp_path):
    token_file = tmp_path / "bot-token"
    token_file.write_text("t")
    backend = StandInBackend(answers=(403,)).start()
    try:
        async with RunnerHarness(FakeCliBridge(tmp_path), **platform_settings(backend, token_file)) as runner:
            await wait_for(lambda: backend.received, what="the first POST")
            # A later run of the session ends after the first turn's task gave up (it never waits long).
            await runner.run(SESSION, script({"text": "a later turn"}))
            marker = runner.settings.state_dir / ".ambient-initial-prompt-started"
    finally:
        backend.stop()
    assert len(backend.received) == 1
    assert not marker.exists()  # not started: a replaced pod tries again


async def test_a_resumed_session_does_not_send_its_first_turn_again(tmp_path):
    token_file = tmp_path / "bot-token"
    token_file.write_text("t")
    backend = StandInBackend().start()
    try:
        async with RunnerHarness(FakeCliBridge(tmp_path),
                                 **platform_settings(backend, token_file, is_resume="true")) as runner:
            await runner.run(SESSION, script({"text": "the user's next message"}))
            assert runner.app.runtime.runs.thread(SESSION) is not None
    finally:
        backend.stop()
    assert backend.received == []


class MountedLoginBridge(FakeCliBridge):
    """A bridge whose login writes a credential file into the state dir (like a mounted ChatGPT auth.json)."""

    def state_files(self) -> StateFiles:
        return StateFiles(credentials=("auth.json", "oauth_creds.json"), logins=("auth.json",))


async def test_on_the_platform_no_credential_file_stays_in_the_state_dir(tmp_path):
    """The platform's sidecar uploads the state dir as is: a login that would write a credential file there is
    refused (with the reason /ready gives), and one left there by an earlier pod is removed."""
    state_root = tmp_path / "app"
    leftover = state_root / ".gemini" / "oauth_creds.json"
    leftover.parent.mkdir(parents=True)
    leftover.write_text('{"refresh_token": "left-by-an-earlier-pod"}')
    settings = {"backend_api_url": "http://127.0.0.1:9/api", "project_name": PROJECT, "session_id": SESSION,
                "runner_state_root": state_root}
    async with RunnerHarness(MountedLoginBridge(tmp_path), **settings) as runner:
        ready = await runner.client.get("/ready")
        run = await runner.client.post("/run", json=runner.run_body(SESSION, script({"text": "x"})))
        caps = await runner.client.get("/capabilities")
    assert not leftover.exists()
    assert ready.status_code == 503 and "writes auth.json into the state dir" in ready.json()["detail"]
    assert run.status_code == 503 and run.json()["code"] == "NOT_READY"
    assert caps.status_code == 503
    # The same login off the platform (our own store, or none) is fine.
    async with RunnerHarness(MountedLoginBridge(tmp_path), runner_state_root=state_root) as runner:
        assert (await runner.client.get("/ready")).status_code == 200
        caps = (await runner.client.get("/capabilities")).json()
    assert caps["session_persistence"] is False


async def test_the_workflows_startup_prompt_joins_the_first_turn(tmp_path):
    """The init container cloned the session's workflow (ACTIVE_WORKFLOW_*): its startupPrompt comes first."""
    token_file = tmp_path / "bot-token"
    token_file.write_text("t")
    workspace = tmp_path / "workspace"
    (workspace / "workflows" / "triage" / ".ambient").mkdir(parents=True)
    (workspace / "workflows" / "triage" / ".ambient" / "ambient.json").write_text(
        '{"startupPrompt": "Introduce yourself as the triage bot."}')
    backend = StandInBackend(answers=(403,)).start()  # taken once, not run: only the POST's body matters here
    try:
        async with RunnerHarness(FakeCliBridge(tmp_path), workspace_path=workspace,
                                 active_workflow_git_url="https://github.com/acme/triage.git",
                                 **platform_settings(backend, token_file, initial_prompt="Fix issue 7")):
            await wait_for(lambda: backend.received, what="the first POST")
    finally:
        backend.stop()
    (message,) = backend.received[0].body["messages"]
    assert message["content"] == "Introduce yourself as the triage bot.\n\nFix issue 7"
