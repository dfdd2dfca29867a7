"""StateSync on its own: hydrate, generations, unchanged state, an older pod superseded by a newer one, failed
syncs retried and reported without touching the stored state, an unreachable store at start."""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401 - see as_the_image_user
import contextlib
import gzip  # noqa: F401 - see as_the_image_user
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_process import free_port

from ambient_runner.state.store import FileStore, S3Store, StoreError
from ambient_runner.state.sync import ARCHIVE, LOCAL_MARKER, StateSync, SyncOutcome
from tests.state.s3server import S3Server


def make_sync(store, state_dir: Path, pod: str, results: list[str] | None = None) -> StateSync:  # type: ignore[no-untyped-def]
    record = results.append if results is not None else (lambda _: None)
    return StateSync(store, state_dir, lambda: ["cache"], record=record, pod_id=pod, retry_delays=(0.05, 0.1))


def stored_names(store, tmp_path: Path) -> list[str]:  # type: ignore[no-untyped-def]
    got = tmp_path / "stored.tar.gz"
    assert store.download(ARCHIVE, got)
    with tarfile.open(got, "r:gz") as tar:
        return sorted(tar.getnames())


async def test_hydrate_sync_and_hydrate_again_on_a_fresh_dir(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    results: list[str] = []
    a_dir = tmp_path / "a" / ".gemini"
    a = make_sync(store, a_dir, "pod-a", results)
    await a.hydrate()
    assert (a.epoch, a.generation) == (1, 0)
    assert json.loads(store.read_bytes("owner.json"))["pod"] == "pod-a"
    (a_dir / "chats").mkdir()
    (a_dir / "chats" / "c1.json").write_text("turn 1")
    (a_dir / "cache").mkdir()
    (a_dir / "cache" / "x").write_text("cache")
    assert (await a.sync("test")).ok and a.generation == 1
    unchanged = await a.sync("test")
    assert unchanged.ok and unchanged.detail == "unchanged" and a.generation == 1
    (a_dir / "chats" / "c1.json").write_text("turn 1, turn 2")
    assert (await a.sync("test")).generation == 2
    assert results == ["hydrate_empty", "ok", "unchanged", "ok"]
    assert stored_names(store, tmp_path) == ["ambient-runner-state-manifest.json", "chats", "chats/c1.json"]

    b_dir = tmp_path / "b" / ".gemini"
    b = make_sync(store, b_dir, "pod-b", results)
    await b.hydrate()
    assert (b.epoch, b.generation) == (2, 2)
    assert (b_dir / "chats" / "c1.json").read_text() == "turn 1, turn 2"
    assert not (b_dir / "cache").exists()
    assert json.loads((b_dir / LOCAL_MARKER).read_text())["generation"] == 2


async def test_an_older_pod_never_overwrites_the_state_of_the_pod_that_replaced_it(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_results: list[str] = []
    a = make_sync(store, a_dir, "pod-a", a_results)
    await a.hydrate()
    (a_dir / "chat").write_text("a1")
    await a.sync("run")
    b = make_sync(store, b_dir, "pod-b")
    await b.hydrate()  # B replaces A while A is still shutting down
    (b_dir / "chat").write_text("a1 b1")
    await b.sync("run")
    (a_dir / "chat").write_text("a1 a2 (late)")
    outcome = await a.sync("shutdown")
    assert not outcome.ok and "pod pod-b took over the state" in outcome.detail
    assert a.problem and store.url in a.problem
    assert a_results == ["hydrate_empty", "ok", "superseded"]
    c = make_sync(store, tmp_path / "c", "pod-c")
    await c.hydrate()
    assert (tmp_path / "c" / "chat").read_text() == "a1 b1"


async def test_a_failed_sync_is_retried_reported_and_leaves_the_stored_state(
        s3_server: S3Server, s3_store: S3Store, tmp_path: Path) -> None:
    results: list[str] = []
    state_dir = tmp_path / "state"
    sync = make_sync(s3_store, state_dir, "pod-a", results)
    await sync.hydrate()
    (state_dir / "chat").write_text("turn 1")
    assert (await sync.sync("run")).ok
    s3_server.stop()
    (state_dir / "chat").write_text("turn 1, turn 2")
    outcome = await sync.sync("run")
    assert not outcome.ok and "s3://" in outcome.detail and sync.last_error
    assert results == ["hydrate_empty", "ok", "retry", "retry", "failed"]
    s3_server.start()  # same port, same data
    fresh = make_sync(s3_store, tmp_path / "fresh", "pod-b")
    await fresh.hydrate()
    assert (tmp_path / "fresh" / "chat").read_text() == "turn 1"


async def test_the_next_sync_after_a_failure_saves_everything(s3_server: S3Server, s3_store: S3Store,
                                                             tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    sync = make_sync(s3_store, state_dir, "pod-a")
    await sync.hydrate()
    s3_server.stop()
    (state_dir / "chat").write_text("turn 1")
    assert not (await sync.sync("run")).ok
    s3_server.start()
    assert (await sync.sync("run")).ok and sync.generation == 1
    assert stored_names(s3_store, tmp_path)[-1] == "chat"


async def test_a_store_unreachable_at_start_turns_syncing_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOTHINGLISTENS00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x" * 40)
    results: list[str] = []
    sync = make_sync(S3Store("bucket", "ns/s1"), tmp_path / "state", "pod-a", results)
    with pytest.raises(StoreError):
        await sync.hydrate()
    assert sync.problem and "s3://bucket/ns/s1" in sync.problem
    (tmp_path / "state").mkdir(exist_ok=True)
    (tmp_path / "state" / "chat").write_text("x")
    assert not (await sync.sync("run")).ok
    assert results == ["retry", "retry", "hydrate_failed"]


async def test_a_restarted_container_keeps_its_newer_local_state(file_store: FileStore, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    first = make_sync(file_store, state_dir, "pod-a/1")
    await first.hydrate()
    (state_dir / "chat").write_text("synced")
    await first.sync("run")
    (state_dir / "chat").write_text("synced + written after the last sync")
    again = make_sync(file_store, state_dir, "pod-a/2")  # same dir (emptyDir survives a container restart)
    results: list[str] = []
    again.record = results.append
    await again.hydrate()
    assert (state_dir / "chat").read_text() == "synced + written after the last sync"
    assert results == ["hydrate_kept_local"] and again.generation == 1



@contextlib.contextmanager
def as_the_image_user() -> Iterator[None]:
    """File access as the image's user (uid 1001, group 0), as the pod runs; root again afterwards. What the sync
    imports on its way is imported above, as root: this Python lives under /root, which uid 1001 cannot read."""
    groups = os.getgroups()
    os.setgroups([])
    os.setegid(0)
    os.seteuid(1001)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setgroups(groups)


async def hydrate_work_and_sync(sync: StateSync, pod: str) -> SyncOutcome:
    await sync.hydrate()
    (sync.state_dir / "chats").mkdir(exist_ok=True)
    (sync.state_dir / "chats" / pod).write_text("turn")
    return await sync.sync("test")


@pytest.mark.skipif(os.geteuid() != 0, reason="takes the image's user (uid 1001), which needs root")
def test_the_image_user_syncs_a_state_dir_whose_parent_it_cannot_write() -> None:
    """As in the image: the state dir /app/.gemini is the runner's (uid 1001, group 0), /app is root's. Hydrate and
    sync keep their temporary files inside the state dir, and the next pod gets the state back."""
    root = Path(tempfile.mkdtemp(prefix="image-user-"))  # tmp_path's parents are root's alone
    try:
        root.chmod(0o755)
        store = FileStore(root / "store")
        store.root.mkdir()
        os.chown(store.root, 1001, 0)
        generations, apps = [], []
        for pod in ("pod-a", "pod-b"):
            app = root / pod / "app"  # root's, 0755: not writable by uid 1001
            (app / ".gemini").mkdir(parents=True)
            os.chown(app / ".gemini", 1001, 0)
            apps.append(app)
            sync = make_sync(store, app / ".gemini", pod)
            with as_the_image_user():
                result = asyncio.run(hydrate_work_and_sync(sync, pod))
            assert result.ok, result.detail
            generations.append(sync.generation)
        assert generations == [1, 2]
        assert sorted(p.name for p in (apps[1] / ".gemini" / "chats").iterdir()) == ["pod-a", "pod-b"]
        for app in apps:
            assert [p.name for p in app.iterdir()] == [".gemini"]  # nothing was written beside it
            assert sorted(p.name for p in (app / ".gemini").iterdir()) == [LOCAL_MARKER, "chats"]
    finally:
        shutil.rmtree(root, ignore_errors=True)
