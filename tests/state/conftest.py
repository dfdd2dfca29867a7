"""Fixtures for the state-sync tests: a real S3 server (rclone serve s3) on loopback, stores, settings."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ambient_runner.state.store import FileStore, S3Store
from tests.state.s3server import S3Server


@pytest.fixture
def s3_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    server = S3Server(tmp_path / "s3-root").start()
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    name = f"sessions-{uuid.uuid4().hex[:8]}"
    s3_server.client().create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_store(bucket: str) -> S3Store:
    return S3Store(bucket, "ns/session-1")


@pytest.fixture
def file_store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "store")


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return request.getfixturevalue(f"{request.param}_store")
