"""A bounded tail of a CLI's stderr, kept for error messages."""

from __future__ import annotations

from collections import deque


class StderrTail:
    """Keeps the last ``max_lines`` lines (each cut to ``max_line_chars``) of a process's stderr."""

    def __init__(self, max_lines: int = 40, max_line_chars: int = 2000) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._max_line_chars = max_line_chars
        self.count = 0  # lines added so far (a mark for ``since``)

    def add(self, line: str) -> None:
        line = line.rstrip("\r\n")
        if not line.strip():
            return
        if len(line) > self._max_line_chars:
            line = line[: self._max_line_chars] + " …[cut]"
        self._lines.append(line)
        self.count += 1

    def since(self, mark: int) -> list[str]:
        """The kept lines added after ``count`` was ``mark`` (a long-lived process's lines of one turn)."""
        new = self.count - mark
        return list(self._lines)[-new:] if new > 0 else []

    def text(self, last: int | None = None) -> str:
        lines = list(self._lines)
        if last is not None:
            lines = lines[-last:]
        return "\n".join(lines)

    def __bool__(self) -> bool:
        return bool(self._lines)
