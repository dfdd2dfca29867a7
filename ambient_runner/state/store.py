"""Durable stores for the state dir: ``file:///path`` (a directory, e.g. a mounted volume) and ``s3://bucket/prefix``.

A store holds a few named objects under its location (the state archive, the owner record). Every write
replaces one object whole, so a reader sees the old or the new object, never a mix: ``FileStore`` writes a
temporary file beside the target and renames it over; ``S3Store`` uploads one object (a PUT, or a multipart
upload that only becomes visible when it completes). The methods block; callers run them in a thread.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol
from urllib.parse import unquote, urlsplit

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.settings import S3Settings


class StoreError(RunnerError):
    """The store could not be read or written; the message names the store and the reason."""

    code = ErrorCode.STATE_STORE


class StateStore(Protocol):
    url: str  # shown in logs and /ready; never holds a credential

    def check(self) -> None:
        """Raise ``StoreError`` when the store cannot be reached (missing bucket, bad credentials, no route)."""

    def download(self, name: str, dest: Path) -> bool:
        """Copy object ``name`` to the file ``dest``; False when there is no such object."""

    def upload(self, name: str, source: Path) -> None:
        """Replace object ``name`` with the file ``source``, atomically."""

    def read_bytes(self, name: str) -> bytes | None: ...

    def write_bytes(self, name: str, data: bytes) -> None: ...


def open_store(url: str, s3: S3Settings | None = None) -> StateStore:
    """The store for a ``STATE_STORE_URL`` (validated by the settings); ``s3``: where an ``s3://`` one is served."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        return FileStore(Path(unquote(parts.path)))
    if parts.scheme == "s3":
        return S3Store(parts.netloc, parts.path.strip("/"), s3)
    raise StoreError(f"unsupported state store URL {url!r}: use file:///path or s3://bucket/prefix")


class FileStore:
    """Objects are files in one directory; a write is a temporary file in that directory renamed over the target."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = f"file://{root}"

    def check(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".ambient-runner-probe-{uuid.uuid4().hex}.tmp"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise StoreError(f"state store {self.url} is not writable: {exc}") from exc

    def download(self, name: str, dest: Path) -> bool:
        try:
            with open(self.root / name, "rb") as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, 1024 * 1024)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StoreError(f"cannot read {name} from state store {self.url}: {exc}") from exc
        return True

    def upload(self, name: str, source: Path) -> None:
        with open(source, "rb") as src:
            self._replace(name, lambda out: shutil.copyfileobj(src, out, 1024 * 1024))

    def read_bytes(self, name: str) -> bytes | None:
        try:
            return (self.root / name).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {name} from state store {self.url}: {exc}") from exc

    def write_bytes(self, name: str, data: bytes) -> None:
        self._replace(name, lambda out: out.write(data))

    def _replace(self, name: str, write: Callable[[IO[bytes]], object]) -> None:
        target = self.root / name
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.root)
        except OSError as exc:
            raise StoreError(f"cannot write {name} to state store {self.url}: {exc}") from exc
        try:
            with os.fdopen(fd, "wb") as out:
                write(out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
            _fsync_dir(self.root)
        except OSError as exc:
            raise StoreError(f"cannot write {name} to state store {self.url}: {exc}") from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class S3Store:
    """Objects are keys under ``prefix/`` in ``bucket``, moved with boto3 (multipart for large archives).

    Endpoint, region and addressing style come from ``s3`` (the settings: the usual AWS variables, read from the
    environment when not given); credentials from boto3's chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``,
    web identity).
    """

    def __init__(self, bucket: str, prefix: str, s3: S3Settings | None = None) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.url = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
        self.s3 = s3 or S3Settings()
        self._client: Any = None

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            endpoint, region = self.s3.endpoint, self.s3.region
            options: dict[str, Any] = {
                "s3": {"addressing_style": self.s3.addressing_style},
                "retries": {"mode": "standard", "max_attempts": 3},
                "connect_timeout": 5, "read_timeout": 60,
            }
            if endpoint:  # S3-compatible servers: send checksums only where the API requires them
                options.update(request_checksum_calculation="when_required",
                               response_checksum_validation="when_required")
            self._client = boto3.session.Session().client("s3", region_name=region, endpoint_url=endpoint,
                                                          config=Config(**options))
        return self._client

    def _error(self, action: str, exc: Exception) -> StoreError:
        return StoreError(f"cannot {action} state store {self.url}: {_describe(exc)}")

    def check(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except Exception as exc:  # botocore raises many kinds; all mean "unreachable" here
            raise self._error("reach", exc) from exc

    def download(self, name: str, dest: Path) -> bool:
        try:
            self.client.download_file(self.bucket, self._key(name), str(dest))
        except Exception as exc:
            if _is_missing(exc):
                return False
            raise self._error(f"read {name} from", exc) from exc
        return True

    def upload(self, name: str, source: Path) -> None:
        try:
            self.client.upload_file(str(source), self.bucket, self._key(name))
        except Exception as exc:
            raise self._error(f"write {name} to", exc) from exc

    def read_bytes(self, name: str) -> bytes | None:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(name))
            return response["Body"].read()
        except Exception as exc:
            if _is_missing(exc):
                return None
            raise self._error(f"read {name} from", exc) from exc

    def write_bytes(self, name: str, data: bytes) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(name), Body=data)
        except Exception as exc:
            raise self._error(f"write {name} to", exc) from exc


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _is_missing(exc: Exception) -> bool:
    return _error_code(exc) in ("404", "NoSuchKey", "NotFound")


def _describe(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        code = error.get("Code", "")
        if code in ("404", "NoSuchBucket"):
            return f"the bucket does not exist ({code})"
        if code in ("403", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"):
            return f"access denied ({code}): check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
        message = error.get("Message") or ""
        return f"{code} {message}".strip() or str(exc)
    return f"{type(exc).__name__}: {exc}"
