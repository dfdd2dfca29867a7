"""The Gemini CLI's session files, read and kept safe around ``session/load``.

The CLI stores a session as ``<home>/.gemini/tmp/<project>/chats/session-<UTC YYYY-MM-DDTHH-MM>-<id8>.jsonl``, the
minute being the one the session was created in. Two CLI bugs lose a session there (research
gemini-acp-and-approvals.md §1.8): a ``session/load`` in the session's creation minute overwrites its file with an
empty history, and a later CLI start deletes every file of a loaded session (unless retention is off, which the
runner's settings make it). So the runner never loads a session in its creation minute, and copies its files before
a load, to put them back if the load fails.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ambient_runner.bridges.acp_client.live import LiveAgent

log = logging.getLogger(__name__)

_NAME = re.compile(r"^session-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2})-([0-9a-f]{8})\.jsonl$")


def current_minute() -> str:
    """This UTC minute, as the CLI writes it into a session file's name."""
    return time.strftime("%Y-%m-%dT%H-%M", time.gmtime())


@dataclass
class Backup:
    """Copies of a session's files, made before a load."""

    copies: dict[Path, Path]  # original path -> copy
    directory: Path
    files: SessionFiles
    session_id: str

    def restore(self) -> None:
        """The session's files as they were before the load: what the load wrote is removed."""
        for path in self.files.files(self.session_id):
            if path not in self.copies:
                path.unlink(missing_ok=True)
        for original, copy in self.copies.items():
            original.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(copy, original)
        self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


class SessionFiles:
    def __init__(self, gemini_dir: Path, backup_root: Path) -> None:
        self.chats = Path(gemini_dir) / "tmp"
        self.backup_root = Path(backup_root)

    def files(self, session_id: str) -> list[Path]:
        """The files of ``session_id`` (by the 8-character id prefix the CLI puts in their names)."""
        prefix = session_id[:8].lower()
        return sorted(p for p in self.chats.glob(f"*/chats/session-*-{prefix}.jsonl")
                      if (m := _NAME.match(p.name)) and m.group(2) == prefix)

    def created_minute(self, session_id: str) -> str | None:
        """The UTC minute the session was created in (its oldest file's), None when it has no file."""
        minutes = [m.group(1) for p in self.files(session_id) if (m := _NAME.match(p.name))]
        return min(minutes) if minutes else None

    def loadable_now(self, session_id: str) -> bool:
        """Whether a ``session/load`` is safe now: the session has a file and was not created in this minute."""
        created = self.created_minute(session_id)
        return created is not None and created < current_minute()

    def project_of(self, cwd: Path) -> str | None:
        """The CLI's name for the project of ``cwd`` (``tmp/<name>``), from its registry (``projects.json``, written
        the first time a session works there); None while it has none."""
        try:
            projects = json.loads((self.chats.parent / "projects.json").read_text()).get("projects", {})
        except (OSError, ValueError, AttributeError):
            return None
        name = projects.get(str(Path(cwd).absolute())) if isinstance(projects, dict) else None
        return name if isinstance(name, str) and name and "/" not in name and name not in (".", "..") else None

    def carry(self, session_id: str, project: str) -> bool:
        """Put the newest file of ``session_id`` into ``tmp/<project>/chats`` (the CLI loads a session only from
        the project of the folder it is loaded in: after a workflow switch that is another one); whether it is there."""
        found = self.files(session_id)
        target_dir = self.chats / project / "chats"
        if any(p.parent == target_dir for p in found):
            return True
        newest = max(found, key=lambda p: p.stat().st_mtime_ns, default=None)
        if newest is None:
            return False
        target_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(newest, target_dir / newest.name)
        return True

    def backup(self, session_id: str) -> Backup:
        self.backup_root.mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix=f"session-{session_id[:8]}-", dir=self.backup_root))
        copies: dict[Path, Path] = {}
        for index, path in enumerate(self.files(session_id)):
            copy = directory / f"{index}-{path.name}"
            shutil.copy2(path, copy)
            copies[path] = copy
        return Backup(copies, directory, self, session_id)


class GeminiSessionKeeper:
    """The shared ACP turns' ``SessionKeeper`` for the Gemini CLI: its session files carried, backed up, and not
    loaded in their creation minute."""

    def __init__(self, files: SessionFiles) -> None:
        self.files = files

    async def carry(self, live: LiveAgent, session_id: str, cwd: Path) -> None:
        """The session's file where a load in ``cwd`` looks for it (a workflow switch changes the folder, and so
        the CLI's project): a project the CLI has not seen yet is registered by a session made there first."""
        project = self.files.project_of(cwd)
        if project is None:
            await live.new_session(cwd)  # the CLI names the folder's project (projects.json)
            project = self.files.project_of(cwd)
        if project is None or not self.files.carry(session_id, project):
            log.warning("session %s could not be carried into %s: its load there may not find it", session_id, cwd)

    def loadable_now(self, session_id: str) -> bool:
        return self.files.loadable_now(session_id)

    def backup(self, session_id: str) -> Backup:
        return self.files.backup(session_id)
