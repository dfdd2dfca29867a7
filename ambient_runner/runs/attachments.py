"""The image and document parts of a run's new user messages, checked and written where the CLI can read them.

Sources (AG-UI 1.0 ``ImagePart`` / ``DocumentPart``): ``data`` (base64); ``url`` with ``file://`` for a path inside the
workspace; ``http(s)`` urls only when ``RUNNER_FETCH_URLS`` is on, and never to a private, loopback or link-local
address; never a ``file`` source (a provider's handle AG-UI says must not be fetched). Each part is bounded
(``RUNNER_MAX_ATTACHMENT_BYTES``), its type must be one the runner's CLI takes and its bytes must be what the type
says. Anything else is an ``AttachmentError`` naming the part (a 422), never a silent drop.

The files go under a folder of their own per admitted run in ``RUNNER_ATTACHMENTS_DIR`` (outside the workspace),
and are removed when the run ends.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ag_ui.core import RunAgentInput, UserMessage

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.bridges.contract import Attachment
from ambient_runner.runs.url_fetch import FetchRefused, fetch_url, public_address
from ambient_runner.workspace.paths import PathRefused, Workspace

MEDIA_KINDS = {"image": "image", "document": "document", "audio": "audio", "video": "video"}
MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",), "image/gif": (b"GIF87a", b"GIF89a"),
    "application/pdf": (b"%PDF-",),
}
EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
              "application/pdf": ".pdf"}


class AttachmentError(RunnerError, ValueError):
    """A part the runner will not pass on; ``part`` names it (``messages[2].content[1]``), and so does the message."""

    code = ErrorCode.INVALID_ATTACHMENT

    def __init__(self, part: str, message: str) -> None:
        super().__init__(f"{part}: {message}", part=part)
        self.part = part


@dataclass(frozen=True)
class AttachmentRules:
    accepted: frozenset[str]  # MIME types the runner's CLI takes
    max_bytes: int
    fetch_urls: bool
    workspace: Workspace
    directory: Path  # RUNNER_ATTACHMENTS_DIR
    address_allowed: Callable[[str], bool] = public_address


def media_parts(run_input: RunAgentInput, trailing: Sequence[UserMessage]) -> list[tuple[str, object]]:
    """``(part name, part)`` of every non-text part of the run's new user messages (``trailing``), in order."""
    found: list[tuple[str, object]] = []
    offset = len(run_input.messages) - len(trailing)
    for index, message in enumerate(trailing, start=offset):
        if isinstance(message.content, str):
            continue
        for number, part in enumerate(message.content):
            if getattr(part, "type", "text") != "text":
                found.append((f"messages[{index}].content[{number}]", part))
    return found


async def collect(run_input: RunAgentInput, trailing: Sequence[UserMessage],
                  rules: AttachmentRules) -> list[Attachment]:
    """The attachments of the run's new user messages (``trailing``), checked and written to
    ``rules.directory/<runId>/``; raises ``AttachmentError``."""
    parts = media_parts(run_input, trailing)
    if not parts:
        return []
    attachments: list[Attachment] = []
    rules.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = Path(tempfile.mkdtemp(prefix=f"{_safe_name(run_input.run_id)[:64]}-", dir=rules.directory))
    try:
        for number, (name, part) in enumerate(parts):
            kind = MEDIA_KINDS.get(getattr(part, "type", ""), "")
            if kind not in ("image", "document"):
                raise AttachmentError(name, f"{kind or 'this'} parts are not taken by this runner (images and "
                                            "documents are)")
            # an image or document part (its kind, above), so it has a source
            data, mime_type = await _read_source(name, part.source, rules)  # type: ignore[attr-defined]
            _check_type(name, kind, mime_type, data, rules.accepted)
            path = target / f"{number + 1}-{kind}{EXTENSIONS.get(mime_type, '')}"
            _write_new(path, data)
            attachments.append(Attachment(name, kind, mime_type, data, path))
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)  # a part refused: nothing of this run stays
        raise
    return attachments


def discard_written(attachments: Sequence[Attachment]) -> None:
    """Remove the files of a run that has ended (the CLI has read them: they are in its session now)."""
    for folder in {a.path.parent for a in attachments}:
        shutil.rmtree(folder, ignore_errors=True)


def _write_new(path: Path, data: bytes) -> None:
    """A new file only (never through a link, never over another's), readable by this user alone."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb") as out:
        out.write(data)


def _safe_name(run_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_id).strip(".") or "run"


async def _read_source(name: str, source: object, rules: AttachmentRules) -> tuple[bytes, str]:
    kind = getattr(source, "type", "")
    declared = (getattr(source, "mime_type", None) or "").split(";")[0].strip().lower()
    value = str(getattr(source, "value", ""))
    if kind == "data":
        if len(value) * 3 // 4 > rules.max_bytes + 3:
            raise AttachmentError(name, f"larger than {rules.max_bytes} bytes (RUNNER_MAX_ATTACHMENT_BYTES)")
        try:
            data = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise AttachmentError(name, "the data is not valid base64") from None
        return _bounded(name, data, rules), declared
    if kind == "file":
        raise AttachmentError(name, "a file source is a provider's handle, which the runner must not fetch; send "
                                    "the bytes (data) or a file:// url inside the workspace")
    if kind != "url":
        raise AttachmentError(name, f"unknown source type {kind!r}")
    try:
        scheme = urlsplit(value).scheme.lower()
    except ValueError:
        raise AttachmentError(name, "the url is not valid") from None
    if scheme == "file":
        return _read_workspace_file(name, value, rules), declared or _guess(value)
    if scheme not in ("http", "https"):
        raise AttachmentError(name, f"url scheme {scheme or '(none)'!r} is not taken (file://, or http(s):// "
                                    "with RUNNER_FETCH_URLS=true)")
    if not rules.fetch_urls:
        raise AttachmentError(name, "fetching urls is off on this runner (RUNNER_FETCH_URLS=true turns it on); "
                                    "send the bytes as data instead")
    try:
        data, served = await fetch_url(value, rules.max_bytes, rules.address_allowed)
    except FetchRefused as exc:
        raise AttachmentError(name, str(exc)) from None
    return data, declared or served or _guess(value)


def _read_workspace_file(name: str, url: str, rules: AttachmentRules) -> bytes:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise AttachmentError(name, f"a file:// url names no host (got {parts.hostname or 'a host'!r})")
    try:
        path = rules.workspace.check(Path(unquote(parts.path)), allow_root=False)
    except PathRefused as exc:
        raise AttachmentError(name, f"{url}: {exc}") from None
    try:
        if not path.is_file():
            raise AttachmentError(name, f"{url}: no such file in the workspace")
        if path.stat().st_size > rules.max_bytes:
            raise AttachmentError(name, f"larger than {rules.max_bytes} bytes (RUNNER_MAX_ATTACHMENT_BYTES)")
        data = path.read_bytes()
    except OSError as exc:
        raise AttachmentError(name, f"{url}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    return _bounded(name, data, rules)


def _bounded(name: str, data: bytes, rules: AttachmentRules) -> bytes:
    if len(data) > rules.max_bytes:
        raise AttachmentError(name, f"larger than {rules.max_bytes} bytes (RUNNER_MAX_ATTACHMENT_BYTES)")
    if not data:
        raise AttachmentError(name, "the part is empty")
    return data


def _guess(url: str) -> str:
    return (mimetypes.guess_type(urlsplit(url).path)[0] or "").lower()


def _check_type(name: str, kind: str, mime_type: str, data: bytes, accepted: Sequence[str] | frozenset[str]) -> None:
    if not mime_type:
        raise AttachmentError(name, "the part does not say its MIME type")
    fits = mime_type.startswith("image/") == (kind == "image")  # an image part holds an image, a document not
    if mime_type not in accepted or not fits:
        taken = ", ".join(sorted(t for t in accepted if t.startswith("image/") == (kind == "image"))) or "none"
        raise AttachmentError(name, f"{mime_type} is not taken by this runner as {kind} (it takes: {taken})")
    magic = MAGIC.get(mime_type)
    webp = mime_type == "image/webp" and not (data[:4] == b"RIFF" and data[8:12] == b"WEBP")
    if webp or (magic and not data.startswith(magic)):
        raise AttachmentError(name, f"the bytes are not {mime_type}")
