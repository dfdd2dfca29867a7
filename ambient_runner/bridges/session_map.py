"""The persisted map from AG-UI thread id to the CLI's session id (Gemini session_id, Codex thread_id,
Claude session_id). It lives in the state dir, is written atomically on every change, and is never evicted. The
same kind of file holds other maps of a runner's sessions (the ACP runner's session -> folder)."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger(__name__)
FILE_NAME = "ambient-runner-sessions.json"


class SessionMap:
    """``name`` in ``state_dir``, the map under its ``section``; ``lenient``: a file that cannot be read is an empty
    map (what it held is lost, said in the log), not an error."""

    def __init__(self, state_dir: Path, name: str = FILE_NAME, *, section: str = "threads",
                 lenient: bool = False) -> None:
        self.path = Path(state_dir) / name
        self.section = section
        self.lenient = lenient
        self._lock = threading.Lock()
        self._map: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text())
            if self.lenient and not (isinstance(data, dict) and isinstance(data.get(self.section, {}), dict)):
                raise ValueError(f"no {self.section!r} object")
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            if self.lenient:
                log.warning("%s cannot be read (%s): taken as empty", self.path, exc)
                return {}
            raise RuntimeError(f"cannot read the session map {self.path}: {exc}") from exc
        return {str(k): str(v) for k, v in data.get(self.section, {}).items()}

    def get(self, thread_id: str) -> str | None:
        with self._lock:
            return self._map.get(thread_id)

    def set(self, thread_id: str, session_id: str) -> None:
        with self._lock:
            if self._map.get(thread_id) == session_id:
                return
            self._write({**self._map, thread_id: session_id})  # kept in memory only once it is on disk
            self._map[thread_id] = session_id

    def reload(self) -> None:
        """Re-read the file (after the state dir was hydrated from the store)."""
        with self._lock:
            self._map = self._load()

    def _write(self, threads: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": 1, self.section: threads}, indent=1, sort_keys=True))
        os.replace(tmp, self.path)
