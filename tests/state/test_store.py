"""FileStore and S3Store (against a real S3 server, rclone serve s3): round trips, missing objects, unreachable
stores, a write that fails half way leaves the previous object, and a reader racing a writer only ever sees whole
archives."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from ambient_runner.settings import RunnerSettings, S3Settings
from ambient_runner.state.snapshot import pack, read_manifest
from ambient_runner.state.store import FileStore, S3Store, StoreError, open_store
from tests.state.s3server import S3Server


def test_open_store_parses_the_url_forms(tmp_path: Path) -> None:
    file_store = open_store(f"file://{tmp_path}/store")
    assert isinstance(file_store, FileStore) and file_store.root == tmp_path / "store"
    s3 = open_store("s3://bucket/ns/session/", S3Settings(state_store_s3_addressing_style="path"))
    assert isinstance(s3, S3Store) and (s3.bucket, s3.prefix, s3.url) == ("bucket", "ns/session", "s3://bucket/ns/session")
    assert open_store("s3://bucket").url == "s3://bucket"


def test_the_s3_client_is_where_the_settings_say(monkeypatch: pytest.MonkeyPatch) -> None:
    """Endpoint, region and addressing style from the settings (the usual AWS variables, read once with them)."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION",
                 "STATE_STORE_S3_ADDRESSING_STYLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")
    settings = RunnerSettings(state_store_url="s3://bucket/p")
    monkeypatch.setenv("AWS_REGION", "ap-south-1")  # after the settings were read: not seen
    meta = open_store(settings.state_store_url, settings.s3).client.meta  # type: ignore[attr-defined]
    assert (meta.endpoint_url, meta.region_name) == ("http://127.0.0.1:9", "eu-west-3")
    assert meta.config.s3["addressing_style"] == "path"  # a custom endpoint: path style unless told
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:10")  # the S3 one wins over the general one
    monkeypatch.setenv("STATE_STORE_S3_ADDRESSING_STYLE", "virtual")
    meta = S3Store("bucket", "p").client.meta
    assert (meta.endpoint_url, meta.region_name, meta.config.s3["addressing_style"]) == (
        "http://127.0.0.1:10", "ap-south-1", "virtual")


def test_round_trip_and_missing_objects(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store.check()
    assert store.read_bytes("owner.json") is None
    assert store.download("state.tar.gz", tmp_path / "got") is False
    source = tmp_path / "src.bin"
    source.write_bytes(os.urandom(3 * 1024 * 1024))
    store.upload("state.tar.gz", source)
    assert store.download("state.tar.gz", tmp_path / "got") is True
    assert (tmp_path / "got").read_bytes() == source.read_bytes()
    store.write_bytes("owner.json", b'{"epoch": 1}')
    store.write_bytes("owner.json", b'{"epoch": 2}')
    assert store.read_bytes("owner.json") == b'{"epoch": 2}'


def test_s3_objects_live_under_the_prefix(s3_store: S3Store, s3_server: S3Server, bucket: str,
                                          tmp_path: Path) -> None:
    s3_store.write_bytes("owner.json", b"{}")
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["ns/session-1/owner.json"]


def test_a_large_archive_goes_up_in_parts(s3_store: S3Store, tmp_path: Path) -> None:
    source = tmp_path / "big"
    source.write_bytes(os.urandom(20 * 1024 * 1024))  # over boto3's multipart threshold (8 MiB)
    s3_store.upload("state.tar.gz", source)
    s3_store.download("state.tar.gz", tmp_path / "back")
    assert (tmp_path / "back").read_bytes() == source.read_bytes()


def test_unreachable_s3_store_names_the_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from runner_process import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOTHINGLISTENS00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x" * 40)
    store = S3Store("bucket", "p")
    with pytest.raises(StoreError, match=r"cannot reach state store s3://bucket/p: EndpointConnectionError"):
        store.check()


def test_missing_bucket_and_bad_credentials_are_told_apart(s3_server: S3Server, bucket: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StoreError, match=r"s3://no-such-bucket/p: the bucket does not exist"):
        S3Store("no-such-bucket", "p").check()
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong" * 8)
    with pytest.raises(StoreError, match=r"access denied .*AWS_SECRET_ACCESS_KEY"):
        S3Store(bucket, "p").check()


def test_file_store_write_killed_half_way_leaves_the_previous_object(file_store: FileStore, tmp_path: Path) -> None:
    """A writer process dies in the middle of an upload: readers still get the previous archive whole."""
    previous = tmp_path / "previous"
    previous.write_bytes(b"previous archive")
    file_store.upload("state.tar.gz", previous)
    fifo = tmp_path / "source"
    os.mkfifo(fifo)
    code = ("import sys; from pathlib import Path; from ambient_runner.state.store import FileStore; "
            "FileStore(Path(sys.argv[1])).upload('state.tar.gz', Path(sys.argv[2]))")
    writer = subprocess.Popen([sys.executable, "-c", code, str(file_store.root), str(fifo)], cwd=Path.cwd())
    try:
        with open(fifo, "wb") as feed:
            feed.write(os.urandom(1024 * 1024))  # the upload copies this much, then waits for more
            feed.flush()
            deadline = time.monotonic() + 60
            while not any(p.name.endswith(".tmp") and p.stat().st_size for p in file_store.root.iterdir()):
                assert time.monotonic() < deadline, "the writer never started writing"
                time.sleep(0.05)
            writer.kill()
            writer.wait()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert file_store.read_bytes("state.tar.gz") == b"previous archive"


class FailingBody:
    """A request body that breaks off half way (the connection drops in the middle of a PUT)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def read(self, size: int = -1) -> bytes:
        if self.pos >= len(self.data) // 2:
            raise ConnectionResetError("connection lost mid-upload")
        size = len(self.data) - self.pos if size is None or size < 0 else size
        size = min(size, len(self.data) // 2 - self.pos, 64 * 1024)
        chunk = self.data[self.pos:self.pos + size]
        self.pos += len(chunk)
        return chunk

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: len(self.data) + offset}[whence]
        return self.pos

    def tell(self) -> int:
        return self.pos


def test_s3_put_broken_off_half_way_leaves_the_previous_object(s3_store: S3Store, tmp_path: Path) -> None:
    """The property the S3 store relies on: an object is replaced only by a complete PUT."""
    previous = tmp_path / "previous"
    previous.write_bytes(b"previous archive")
    s3_store.upload("state.tar.gz", previous)
    with pytest.raises(Exception):  # noqa: B017 - whatever botocore raises for the broken body
        s3_store.client.put_object(Bucket=s3_store.bucket, Key=s3_store._key("state.tar.gz"),
                                   Body=FailingBody(os.urandom(4 * 1024 * 1024)))
    assert s3_store.read_bytes("state.tar.gz") == b"previous archive"


def test_a_reader_racing_a_writer_only_sees_whole_archives(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "state"
    src.mkdir()
    archives = []
    for generation in range(1, 9):
        (src / "chat.jsonl").write_bytes(os.urandom(512 * 1024))  # incompressible: every archive is ~512 KiB
        archive = tmp_path / f"gen{generation}.tar.gz"
        pack(src, archive, [], {"generation": generation})
        archives.append(archive)
    store.upload("state.tar.gz", archives[0])
    done = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def reader() -> None:
        n = 0
        while not done.is_set() or n == 0:
            n += 1
            got = tmp_path / f"read-{n}.tar.gz"
            try:
                assert store.download("state.tar.gz", got)
                with tarfile.open(got, "r:gz") as tar:
                    assert [m.name for m in tar.getmembers()][1:] == ["chat.jsonl"]  # reads every byte
                seen.append(read_manifest(got)["generation"])
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return
            finally:
                got.unlink(missing_ok=True)

    thread = threading.Thread(target=reader)
    thread.start()
    for _ in range(3):
        for archive in archives:
            store.upload("state.tar.gz", archive)
    done.set()
    thread.join(120)
    assert not errors, errors[0]
    assert seen and set(seen) <= set(range(1, 9))
