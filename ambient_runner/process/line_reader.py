"""A line reader whose memory stays bounded, whatever the process prints."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

CHUNK_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class OutputLine:
    """One line of output, without its newline.

    ``dropped_bytes`` > 0 means the line was longer than the reader's limit: ``text`` holds the first
    ``max_line_bytes`` and the rest was discarded (never held in memory).
    """

    text: str
    dropped_bytes: int = 0

    @property
    def truncated(self) -> bool:
        return self.dropped_bytes > 0


class LineSplitter:
    """Cuts chunks of output into lines, holding at most ``max_line_bytes`` of an unfinished line.

    Lines are split on ``\\n`` (a trailing ``\\r`` is removed) and decoded as UTF-8 with replacement, so binary
    garbage or invalid UTF-8 never raises. ``flush()`` gives the unfinished last line (at EOF, or when reading is
    cancelled)."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._dropping = 0  # > 0 while discarding the tail of an oversized line

    def feed(self, chunk: bytes) -> list[OutputLine]:
        """The lines that ``chunk`` completes."""
        lines: list[OutputLine] = []
        buffer, limit = self._buffer, self.max_line_bytes
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                piece = chunk[start:]
                if self._dropping:
                    self._dropping += len(piece)
                else:
                    room = limit - len(buffer)
                    if len(piece) > room:
                        buffer += piece[: max(room, 0)]
                        self._dropping = len(piece) - max(room, 0)
                    else:
                        buffer += piece
                return lines
            piece = chunk[start:newline]
            if self._dropping:
                lines.append(_line(buffer, self._dropping + len(piece)))
                self._dropping = 0
            else:
                room = limit - len(buffer)
                if len(piece) > room:
                    buffer += piece[: max(room, 0)]
                    lines.append(_line(buffer, len(piece) - max(room, 0)))
                else:
                    buffer += piece
                    lines.append(_line(buffer, 0))
            buffer.clear()
            start = newline + 1

    def flush(self) -> OutputLine | None:
        """The unfinished line held so far (``None`` if there is none); the splitter is empty after."""
        if not (self._buffer or self._dropping):
            return None
        line = _line(self._buffer, self._dropping)
        self._buffer.clear()
        self._dropping = 0
        return line


async def read_lines(stream: asyncio.StreamReader, max_line_bytes: int) -> AsyncIterator[OutputLine]:
    """Yield the lines of ``stream`` until EOF, holding at most ``max_line_bytes + CHUNK_BYTES`` bytes (see
    ``LineSplitter``). A last line without a newline is yielded at EOF."""
    splitter = LineSplitter(max_line_bytes)
    while chunk := await stream.read(CHUNK_BYTES):
        for line in splitter.feed(chunk):
            yield line
    last = splitter.flush()
    if last is not None:
        yield last


def _line(buffer: bytearray, dropped: int) -> OutputLine:
    if buffer.endswith(b"\r"):
        del buffer[-1]
    return OutputLine(buffer.decode("utf-8", errors="replace"), dropped)
