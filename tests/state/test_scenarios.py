"""A replaced pod continues the conversation: runner A works on a thread, stops (SIGTERM, or dies), runner B starts
on a fresh state root with the same store and the next run on the thread continues where the store left it.
The CLI is the fake CLI with state (``StatefulFakeBridge``): its reply lists the turns it remembers."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from ambient_runner.settings import load_settings
from ambient_runner.state.extension import state_extensions
from ambient_runner.state.store import open_store
from ambient_runner.state.sync import ARCHIVE
from tests.state.runners import REPO, RunnerProcess, read_run, synced_harness
from tests.state.state_fakes import reply


@pytest.fixture(params=["file", "s3"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        return f"file://{tmp_path}/store/ns/session-1"
    bucket = request.getfixturevalue("bucket")
    return f"s3://{bucket}/ns/session-1"


@pytest.fixture
def s3_url(bucket: str) -> str:
    return f"s3://{bucket}/ns/session-1"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


async def metrics_once(client: httpx.AsyncClient, needle: str) -> str:
    """/metrics, once it contains ``needle`` (the after-run sync runs after the run's stream has ended)."""
    for _ in range(600):
        text = (await client.get("/metrics")).text
        if needle in text:
            return text
        await asyncio.sleep(0.1)
    raise AssertionError(f"{needle} never appeared in /metrics:\n{text}")


def stored_members(url: str, tmp_path: Path) -> list[str]:
    got = tmp_path / "stored.tar.gz"
    assert open_store(url).download(ARCHIVE, got)
    with tarfile.open(got, "r:gz") as tar:
        return sorted(tar.getnames())


async def test_a_replaced_pod_continues_the_conversation(store_url: str, workspace: Path, tmp_path: Path) -> None:
    async with synced_harness(store_url, workspace) as a:
        first = await a.run("t1", "first question")
        metrics = await metrics_once(a.client, 'ambient_state_syncs_total{result="ok"')  # the after-run sync
        a_state = a.settings.state_dir
        session_file = next((a_state / "sessions").iterdir()).name
        assert (await a.client.get("/ready")).json() == {"ready": True}
    assert reply(first) == "history: first question"
    assert 'ambient_state_syncs_total{result="hydrate_empty",runner="gemini-cli"} 1.0' in metrics
    # What is stored: the sessions and the thread map; not the credential file, the cache or sync temp files.
    assert stored_members(store_url, tmp_path) == [
        "ambient-runner-sessions.json", "ambient-runner-state-manifest.json", "sessions", f"sessions/{session_file}"]
    async with synced_harness(store_url, workspace) as b:
        assert b.settings.state_dir != a_state
        second = await b.run("t1", "second question")
        other = await b.run("t2", "a new thread")
    assert reply(second) == "history: first question | second question"
    assert reply(other) == "history: a new thread"


async def signal_mid_run(runner: RunnerProcess, client: httpx.AsyncClient, prompt: str,
                         sig: signal.Signals) -> asyncio.Task[list[dict[str, Any]]]:
    """Start a run on thread t1, send ``sig`` to the runner once its first text arrived; the run's reading task."""
    text_seen = asyncio.Event()
    run = asyncio.create_task(read_run(client, "t1", prompt, on_event=lambda e: (
        text_seen.set() if e["type"] == "TEXT_MESSAGE_CONTENT" else None)))
    await asyncio.wait_for(text_seen.wait(), 60)
    runner.signal(sig)
    return run


async def test_sigterm_mid_run_saves_the_state_before_the_process_ends(s3_url: str, workspace: Path,
                                                                        tmp_path: Path) -> None:
    a = await RunnerProcess(tmp_path / "a", s3_url, workspace, RUNNER_SYNC_INTERVAL="3600").start()
    try:
        assert reply(await a.run("t1", "first")) == "history: first"
        async with httpx.AsyncClient(base_url=a.base_url, timeout=120) as client:
            run = await signal_mid_run(a, client, "SLOW second", signal.SIGTERM)  # the pod is being replaced
            interrupted = await asyncio.wait_for(run, 60)
        assert interrupted[-1]["type"] == "RUN_ERROR" and interrupted[-1]["code"] == "SHUTDOWN"
        assert await a.wait() in (0, -signal.SIGTERM)  # uvicorn re-raises SIGTERM once it has shut down
    finally:
        a.stop()
    log = a.log.read_text()
    assert "state sync (shutdown): generation 2 saved to " + s3_url in log, log[-3000:]
    assert log.index("generation 2 saved") < log.index("runner stopped")

    async with synced_harness(s3_url, workspace) as b:
        third = await b.run("t1", "third")
    assert reply(third) == "history: first | SLOW second | third"


async def test_a_crash_between_syncs_continues_from_the_last_completed_run(s3_url: str, workspace: Path,
                                                                          tmp_path: Path) -> None:
    a = await RunnerProcess(tmp_path / "a", s3_url, workspace, RUNNER_SYNC_INTERVAL="3600").start()
    try:
        assert reply(await a.run("t1", "first")) == "history: first"
        async with httpx.AsyncClient(base_url=a.base_url, timeout=120) as client:
            run = await signal_mid_run(a, client, "SLOW lost", signal.SIGKILL)  # no final sync
            with contextlib.suppress(Exception):
                await asyncio.wait_for(run, 30)
        await a.wait()
    finally:
        a.stop()
    assert "lost" in (next((a.state_dir / "sessions").iterdir())).read_text()  # A had it, unsynced

    async with synced_harness(s3_url, workspace) as b:
        again = await b.run("t1", "second")
    assert reply(again) == "history: first | second"


async def test_periodic_sync_while_a_run_is_active(s3_url: str, workspace: Path, tmp_path: Path) -> None:
    a = await RunnerProcess(tmp_path / "a", s3_url, workspace, RUNNER_SYNC_INTERVAL="0.5").start()
    try:
        async with httpx.AsyncClient(base_url=a.base_url, timeout=120) as client:
            run = asyncio.create_task(read_run(client, "t1", "SLOW long task"))
            store = open_store(s3_url)
            got = tmp_path / "poll.tar.gz"
            for _ in range(600):  # until a periodic sync has saved the running turn
                if store.download(ARCHIVE, got):
                    with tarfile.open(got, "r:gz") as tar:
                        names = [m for m in tar.getnames() if m.startswith("sessions/")]
                        if any(b"SLOW long task" in tar.extractfile(n).read() for n in names  # type: ignore[union-attr]
                               if tar.getmember(n).isfile()):
                            break
                await asyncio.sleep(0.1)
            else:
                pytest.fail("no periodic sync saved the active run")
            a.signal(signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(run, 30)
    finally:
        a.stop()
    async with synced_harness(s3_url, workspace) as b:
        again = await b.run("t1", "next")
    assert reply(again) == "history: SLOW long task | next"


async def test_store_unreachable_at_start_is_a_503_naming_the_store(workspace: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from runner_process import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOTHINGLISTENS00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x" * 40)
    async with synced_harness("s3://sessions/ns/session-1", workspace) as runner:
        health = await runner.client.get("/health")
        await runner.app.runtime.boot.done.wait()  # restoring runs after the server is up, /ready says "starting"
        ready = await runner.client.get("/ready")
        metrics = (await runner.client.get("/metrics")).text
    assert health.status_code == 200
    assert ready.status_code == 503
    detail: dict[str, Any] = ready.json()
    assert detail["ready"] is False
    assert detail["detail"].startswith("the state could not be restored from the state store "
                                       "s3://sessions/ns/session-1 (cannot reach state store s3://sessions/ns/session-1:"
                                       " EndpointConnectionError")
    assert 'result="hydrate_failed"' in metrics


def test_a_bad_store_url_stops_the_process_with_one_line(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "STATE_STORE_URL": "ftp://files/state", "RUNNER_STATE_ROOT": str(tmp_path)}
    done = subprocess.run([sys.executable, "main.py"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "ambient-runner: invalid STATE_STORE_URL (got 'ftp://files/state'): must be file:///absolute/path or "
        "s3://bucket/prefix"]


def test_no_store_url_means_no_sync_and_one_log_line(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    with caplog.at_level("INFO"):
        assert state_extensions(load_settings(runner_state_root=tmp_path)) == []
    assert [r.getMessage() for r in caplog.records] == [
        f"state sync: off (STATE_STORE_URL is not set); the state dir {tmp_path}/.gemini is not saved anywhere"]
