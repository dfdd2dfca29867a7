"""Packing the state dir into one archive (gzipped tar) and unpacking it, with excludes.

* Excludes are globs relative to the state dir. A glob with a ``/`` is matched against the whole relative path;
  one without is matched against each path component, so ``cache`` or ``*.log`` leave out that name at any depth.
  A matching directory is left out with everything under it.
* Always left out: sockets, FIFOs and devices; symlinks that point outside the state dir; files over
  ``MAX_FILE_BYTES``; the sync's own temporary files; well-known credential files (credentials come from
  secrets, never from the store); plus whatever the bridge's ``state_files()`` leaves out.
* SQLite databases (recognised by their header) are copied with SQLite's backup API, which gives a consistent
  copy even while the CLI has the database open; their ``-wal``/``-shm``/``-journal`` files are not packed.
* The archive's first member is a manifest (generation, writer) that ``unpack`` reads and does not extract.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import io
import json
import logging
import os
import shutil
import sqlite3
import stat
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ag_ui_cli_common.json_types import JsonObject, object_or_empty

log = logging.getLogger(__name__)

MANIFEST_NAME = "ambient-runner-state-manifest.json"
MAX_FILE_BYTES = 1024 * 1024 * 1024
SYNC_TEMP_PREFIX = ".ambient-runner-sync"  # the sync's own temporary files and marker, never packed
SQLITE_HEADER = b"SQLite format 3\x00"
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")

ALWAYS_EXCLUDED = (
    f"{SYNC_TEMP_PREFIX}*",
    ".ambient-runner-sessions.json.*.tmp",  # SessionMap's temporary file
    "*.sock",
    # Credential files of the CLIs (Gemini, Claude, Codex); they are written from secrets at startup.
    "oauth_creds.json", "google_accounts.json", ".credentials.json", "auth.json",
)


class ExcludeRules:
    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = [p.strip().strip("/") for p in (*ALWAYS_EXCLUDED, *patterns) if p.strip().strip("/")]

    def excluded(self, relative: str) -> bool:
        path = PurePosixPath(relative)
        parts = path.parts
        for pattern in self.patterns:
            if "/" in pattern:
                prefixes = ("/".join(parts[: i + 1]) for i in range(len(parts)))
                if any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes):
                    return True
            elif any(fnmatch.fnmatchcase(part, pattern) for part in parts):
                return True
        return False


@dataclass
class PackResult:
    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _sqlite_copy(source: Path, dest: Path) -> None:
    """A consistent copy of an open database (its WAL included) via the backup API."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=10)
    try:
        out = sqlite3.connect(dest)
        try:
            src.backup(out)
        finally:
            out.close()
    finally:
        src.close()


def _walk(state_dir: Path, rules: ExcludeRules) -> Iterator[tuple[Path, str]]:
    """(path, relative name) of every entry to pack, parents before children, sorted for a stable archive."""
    for root, dirs, files in os.walk(state_dir):
        root_path = Path(root)
        rel_root = root_path.relative_to(state_dir).as_posix()
        kept_dirs = []
        for name in sorted(dirs):
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            if rules.excluded(rel):
                continue
            kept_dirs.append(name)
        dirs[:] = kept_dirs  # os.walk does not descend into excluded dirs (nor follow symlinked ones)
        for name in kept_dirs:
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            yield root_path / name, rel
        for name in sorted(files):
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            if not rules.excluded(rel):
                yield root_path / name, rel


def fingerprint(state_dir: Path, excludes: Iterable[str]) -> str:
    """A cheap digest of what ``pack`` would pack (names, sizes, mtimes): unchanged state is not uploaded again."""
    digest = hashlib.sha256()
    state_dir = Path(os.path.abspath(state_dir))
    entries = _walk(state_dir, ExcludeRules(excludes)) if state_dir.is_dir() else iter(())
    for path, rel in entries:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        digest.update(f"{rel}\0{info.st_mode}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _link_inside(state_dir: Path, link: Path) -> bool:
    target = os.readlink(link)
    if os.path.isabs(target):
        return False
    resolved = os.path.normpath(os.path.join(os.path.dirname(link), target))
    return resolved == str(state_dir) or resolved.startswith(str(state_dir) + os.sep)


def _add(tar: tarfile.TarFile, state_dir: Path, path: Path, rel: str, database: bool, scratch: Path,
         result: PackResult) -> None:
    """Add one entry. A regular file is first copied (a database through the backup API), so the bytes in the
    archive match the size in its header even when the CLI changes the file meanwhile."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        if not _link_inside(state_dir, path):
            result.skipped.append(f"{rel} (symlink out of the state dir)")
            return
        tar.add(path, arcname=rel, recursive=False)
    elif stat.S_ISDIR(mode):
        tar.add(path, arcname=rel, recursive=False)
    elif stat.S_ISREG(mode):
        size = os.lstat(path).st_size
        if size > MAX_FILE_BYTES:
            result.skipped.append(f"{rel} ({size} bytes, over {MAX_FILE_BYTES})")
            return
        copy = scratch / "copy"
        if database:
            _sqlite_copy(path, copy)
        else:
            shutil.copyfile(path, copy, follow_symlinks=False)
        try:
            info = tar.gettarinfo(str(copy), arcname=rel)
            info.mode = stat.S_IMODE(mode)
            info.mtime = int(os.lstat(path).st_mtime)
            with open(copy, "rb") as handle:
                tar.addfile(info, handle)
        finally:
            copy.unlink()
        result.files += 1
        result.bytes += info.size
    # sockets, FIFOs and devices are never packed


def pack(state_dir: Path, archive: Path, excludes: Iterable[str], manifest: Mapping[str, object]) -> PackResult:
    """Write ``state_dir`` (minus excludes) to the gzipped tar ``archive``; returns what was packed."""
    rules = ExcludeRules(excludes)
    result = PackResult()
    state_dir = Path(os.path.abspath(state_dir))
    with tempfile.TemporaryDirectory(prefix=f"{SYNC_TEMP_PREFIX}-sqlite-") as scratch, \
            tarfile.open(archive, "w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
        data = json.dumps(manifest, sort_keys=True).encode()
        info = tarfile.TarInfo(MANIFEST_NAME)
        info.size = len(data)
        info.mode = 0o600
        tar.addfile(info, io.BytesIO(data))
        entries = list(_walk(state_dir, rules)) if state_dir.is_dir() else []
        databases = {rel for path, rel in entries if path.is_file() and not path.is_symlink() and _is_sqlite(path)}
        for path, rel in entries:
            if any(rel.endswith(suffix) and rel[: -len(suffix)] in databases for suffix in SQLITE_SIDE_FILES):
                continue  # the backup copy of the database already holds them
            try:
                _add(tar, state_dir, path, rel, rel in databases, Path(scratch), result)
            except FileNotFoundError:  # removed by the CLI while we walked
                continue
            except (OSError, sqlite3.Error) as exc:
                result.skipped.append(f"{rel} ({exc})")
    for skipped in result.skipped:
        log.warning("state sync: not packed: %s", skipped)
    return result


def read_manifest(archive: Path) -> JsonObject:
    with tarfile.open(archive, "r:gz") as tar:
        first = tar.next()
        if first is None or first.name != MANIFEST_NAME:
            raise ValueError("not a state archive (no manifest)")
        handle = tar.extractfile(first)
        assert handle is not None
        return object_or_empty(json.loads(handle.read()))


def unpack(archive: Path, state_dir: Path) -> JsonObject:
    """Extract ``archive`` into ``state_dir`` (entries replace what is there); returns its manifest.

    The whole archive is first extracted into a staging dir inside ``state_dir``, named with the sync's prefix so
    that it is never packed (the parent need not be writable: in the image it is /app, root's); a corrupt archive
    fails there and leaves ``state_dir`` alone. Members that would land outside the dir are skipped.
    """
    manifest = read_manifest(archive)
    state_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{SYNC_TEMP_PREFIX}-hydrate-", dir=state_dir))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                if member.name == MANIFEST_NAME:
                    continue
                try:
                    safe = tarfile.data_filter(member, str(staging))
                except tarfile.FilterError as exc:
                    log.warning("state sync: skipped archive member %s: %s", member.name, exc)
                    continue
                tar.extract(safe, staging, filter="fully_trusted", set_attrs=True)
        for entry in sorted(staging.iterdir()):
            _move_into(entry, state_dir / entry.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _move_into(source: Path, target: Path) -> None:
    """Move ``source`` to ``target``, merging directories and replacing files."""
    if source.is_dir() and not source.is_symlink() and target.is_dir() and not target.is_symlink():
        for child in sorted(source.iterdir()):
            _move_into(child, target / child.name)
        return
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    else:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
    os.replace(source, target)
