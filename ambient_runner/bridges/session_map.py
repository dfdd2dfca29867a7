"""The persisted map from AG-UI thread id to the CLI's session id (Gemini session_id, Codex thread_id,
Claude session_id). It lives in the state dir, is written atomically on every change, and is never evicted."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

FILE_NAME = "ambient-runner-sessions.json"


class SessionMap:
    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / FILE_NAME
        self._lock = threading.Lock()
        self._map: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"cannot read the session map {self.path}: {exc}") from exc
        return {str(k): str(v) for k, v in data.get("threads", {}).items()}

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
        tmp.write_text(json.dumps({"version": 1, "threads": threads}, indent=1, sort_keys=True))
        os.replace(tmp, self.path)
