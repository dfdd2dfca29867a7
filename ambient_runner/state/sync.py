"""StateSync: hydrate the state dir from the store at start, and save it back as one archive.

Objects in the store (under the URL's location):

* ``state.tar.gz`` - the whole state dir (excludes applied), replaced whole on every sync. Its manifest carries
  a generation number (+1 per sync), the writing pod and its owner epoch.
* ``owner.json`` - ``{"epoch": n, "pod": ...}``: the pod that owns the session's state. A pod claims it at
  hydrate (epoch + 1) before reading the archive. Before every upload a pod re-reads it; when another pod has
  claimed the store since, this pod is *superseded*: it stops syncing (its state is older than the state the
  newer pod started from), logs an error, counts ``superseded`` and ``/ready`` says so. So an old pod that is
  still shutting down never overwrites the state of the pod that replaced it.

A store that cannot be reached at start leaves syncing off for the life of the process (an unhydrated state dir
must never replace the stored one); ``/ready`` names the store until the pod is restarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ag_ui_cli_common.json_types import JsonObject, int_of
from ambient_runner.state.snapshot import SYNC_TEMP_PREFIX, fingerprint, pack, read_manifest, unpack
from ambient_runner.state.store import StateStore, StoreError

log = logging.getLogger(__name__)

ARCHIVE = "state.tar.gz"
OWNER = "owner.json"
LOCAL_MARKER = f"{SYNC_TEMP_PREFIX}.json"  # in the state dir: generation last hydrated/synced (never packed)
RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0)


class SupersededError(RunnerError):
    """Another runner has written the store since this one read it."""

    code = ErrorCode.STATE_STORE


@dataclass
class SyncOutcome:
    ok: bool
    generation: int
    detail: str = ""


def default_pod_id() -> str:
    """This process, named as the pod's host (in a pod: its name), its pid and a nonce."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


class StateSync:
    def __init__(self, store: StateStore, state_dir: Path, excludes: Callable[[], Iterable[str]], *,
                 record: Callable[[str], None] = lambda result: None, pod_id: str | None = None,
                 retry_delays: tuple[float, ...] = RETRY_DELAYS) -> None:
        self.store = store
        self.state_dir = state_dir
        self.excludes = excludes
        self.record = record  # metrics: RunnerMetrics.state_sync
        self.pod_id = pod_id or default_pod_id()
        self.retry_delays = retry_delays
        self.generation = 0
        self.epoch = 0
        self.hydrated = False
        self.problem: str | None = None  # for /ready
        self.last_error: str | None = None
        self._lock = asyncio.Lock()
        self._synced_fingerprint: str | None = None
        self._unchanged = False

    # ----- hydrate ---------------------------------------------------------------------------------------
    async def hydrate(self) -> None:
        """Claim the store and restore the state dir from it. Raises StoreError (after retries) when unreachable."""
        try:
            await self._with_retries("hydrate", self._hydrate_once, deadline=None)
        except StoreError as exc:
            self.problem = (f"the state could not be restored from the state store {self.store.url} ({exc}); "
                            "this pod does not save its state either: fix the store and restart the pod")
            self.record("hydrate_failed")
            log.error("state sync: %s", self.problem)
            raise
        self.hydrated = True

    def _hydrate_once(self) -> None:
        self.store.check()
        owner = _json(self.store.read_bytes(OWNER))
        self.epoch = int_of(owner.get("epoch", 0)) + 1
        claim = {"epoch": self.epoch, "pod": self.pod_id, "since": _now()}
        self.store.write_bytes(OWNER, json.dumps(claim).encode())
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with _temp_file(self.state_dir) as archive:
            if not self.store.download(ARCHIVE, archive):
                self.generation = 0
                self.record("hydrate_empty")
                log.info("state sync: %s holds no state yet; starting fresh (owner epoch %d)", self.store.url,
                         self.epoch)
                self._write_marker()
                return
            local = _json(_read(self.state_dir / LOCAL_MARKER))
            manifest = _archive_manifest(archive)
            stored = int_of(manifest.get("generation", 0))
            if local.get("store") == self.store.url and int_of(local.get("generation", -1)) >= stored:
                # The same pod's container restarted: its state dir is at least as new as the store's.
                self.generation = int_of(local["generation"])
                self.record("hydrate_kept_local")
                log.info("state sync: local state (generation %d) is current with %s; kept", self.generation,
                         self.store.url)
                return
            try:
                unpack(archive, self.state_dir)
            except (OSError, ValueError, EOFError) as exc:
                raise StoreError(f"the state archive in {self.store.url} cannot be unpacked: {exc}") from exc
            self.generation = stored
            self._write_marker()
        self.record("hydrated")
        log.info("state sync: restored %s from %s (generation %d by %s; owner epoch %d)", self.state_dir,
                 self.store.url, self.generation, manifest.get("pod", "?"), self.epoch)

    # ----- sync ------------------------------------------------------------------------------------------
    async def sync(self, reason: str, *, deadline: float | None = None) -> SyncOutcome:
        """Pack the state dir and upload it as one object, retrying with backoff. Never raises."""
        if not self.hydrated:
            return SyncOutcome(False, self.generation, "not hydrated: syncing is off")
        async with self._lock:
            if self.problem:
                return SyncOutcome(False, self.generation, self.problem)
            try:
                await self._with_retries(f"sync ({reason})", self._sync_once, deadline=deadline)
            except SupersededError as exc:
                self.problem = str(exc)
                self.record("superseded")
                log.error("state sync: %s", exc)
                return SyncOutcome(False, self.generation, str(exc))
            except (StoreError, OSError, TimeoutError) as exc:
                self.last_error = str(exc)
                self.record("failed")
                log.error("state sync (%s) to %s failed: %s", reason, self.store.url, exc)
                return SyncOutcome(False, self.generation, str(exc))
            self.last_error = None
            if self._unchanged:
                self.record("unchanged")
                log.debug("state sync (%s): nothing changed since generation %d", reason, self.generation)
                return SyncOutcome(True, self.generation, "unchanged")
            self.record("ok")
            log.info("state sync (%s): generation %d saved to %s", reason, self.generation, self.store.url)
            return SyncOutcome(True, self.generation)

    def _sync_once(self) -> None:
        excludes = list(self.excludes())
        current = fingerprint(self.state_dir, excludes)
        if current == self._synced_fingerprint:
            self._unchanged = True
            return
        self._unchanged = False
        generation = self.generation + 1
        manifest = {"format": 1, "generation": generation, "pod": self.pod_id, "epoch": self.epoch,
                    "writtenAt": _now(), "stateDir": self.state_dir.name}
        with _temp_file(self.state_dir) as archive:
            result = pack(self.state_dir, archive, excludes, manifest)
            owner = _json(self.store.read_bytes(OWNER))
            if owner.get("pod") != self.pod_id:
                raise SupersededError(
                    f"pod {owner.get('pod', '?')} took over the state in {self.store.url} (owner epoch "
                    f"{owner.get('epoch', '?')}, this pod has {self.epoch}); this pod no longer saves its state, "
                    "so it does not overwrite the newer pod's")
            self.store.upload(ARCHIVE, archive)
        self.generation = generation
        self._synced_fingerprint = current
        self._write_marker()
        log.debug("state sync: packed %d files, %d bytes", result.files, result.bytes)

    async def _with_retries(self, what: str, action: Callable[[], None], *, deadline: float | None) -> None:
        delays = list(self.retry_delays)
        while True:
            try:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"{what}: out of time")
                async with asyncio.timeout(remaining):
                    await asyncio.shield(asyncio.to_thread(action))
                return
            except StoreError as exc:
                if not delays:
                    raise
                delay = delays.pop(0)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise
                self.record("retry")
                log.warning("state sync: %s failed (%s); retrying in %g s", what, exc, delay)
                await asyncio.sleep(delay)

    # ----- periodic --------------------------------------------------------------------------------------
    async def run_periodically(self, interval: float, active: Callable[[], bool], stop: asyncio.Event) -> None:
        """Every ``interval`` seconds, sync while a run is active (after-run syncs cover the rest), until ``stop``.

        Stopping waits for a sync in progress instead of cancelling it, so it cannot race the final sync."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await stop.wait()
            if not stop.is_set() and active() and self.hydrated and not self.problem:
                await self.sync("periodic")

    async def final_sync(self, limit: float) -> None:
        """The shutdown sync, bounded by ``limit`` seconds; a failure is logged as an error naming the store."""
        if not self.hydrated:
            log.error("state sync: no final sync: the state was never restored from %s, so it is not saved",
                      self.store.url)
            return
        try:
            outcome = await asyncio.wait_for(self.sync("shutdown", deadline=time.monotonic() + limit),
                                             limit + 1)
        except TimeoutError:
            outcome = SyncOutcome(False, self.generation, f"did not finish within {limit:g} s")
        if not outcome.ok:
            log.error("state sync: the final sync to %s failed (%s); the state since generation %d is NOT saved",
                      self.store.url, outcome.detail, self.generation)

    def _write_marker(self) -> None:
        marker = {"store": self.store.url, "generation": self.generation, "pod": self.pod_id}
        tmp = self.state_dir / f"{LOCAL_MARKER}.{os.getpid()}.tmp"
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(marker))
            os.replace(tmp, self.state_dir / LOCAL_MARKER)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _json(data: bytes | None) -> JsonObject:
    if not data:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _archive_manifest(archive: Path) -> JsonObject:
    try:
        return read_manifest(archive)
    except (OSError, ValueError, EOFError) as exc:
        raise StoreError(f"the state archive is unreadable: {exc}") from exc


@contextlib.contextmanager
def _temp_file(directory: Path) -> Iterator[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f"{SYNC_TEMP_PREFIX}-", suffix=".tar.gz", dir=directory)
    os.close(fd)
    try:
        yield Path(name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
