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


async def read_lines(stream: asyncio.StreamReader, max_line_bytes: int) -> AsyncIterator[OutputLine]:
    """Yield the lines of ``stream`` until EOF, holding at most ``max_line_bytes + CHUNK_BYTES`` bytes.

    Lines are split on ``\\n`` (a trailing ``\\r`` is removed) and decoded as UTF-8 with replacement, so
    binary garbage or invalid UTF-8 never raises. A last line without a newline is yielded at EOF.
    """
    buffer = bytearray()
    dropping = 0  # > 0 while discarding the tail of an oversized line
    while True:
        chunk = await stream.read(CHUNK_BYTES)
        if not chunk:
            break
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                piece = chunk[start:]
                if dropping:
                    dropping += len(piece)
                else:
                    room = max_line_bytes - len(buffer)
                    if len(piece) > room:
                        buffer += piece[: max(room, 0)]
                        dropping = len(piece) - max(room, 0)
                    else:
                        buffer += piece
                break
            piece = chunk[start:newline]
            if dropping:
                yield _line(buffer, dropping + len(piece))
                dropping = 0
            else:
                room = max_line_bytes - len(buffer)
                if len(piece) > room:
                    buffer += piece[: max(room, 0)]
                    yield _line(buffer, len(piece) - max(room, 0))
                else:
                    buffer += piece
                    yield _line(buffer, 0)
            buffer.clear()
            start = newline + 1
    if buffer or dropping:
        yield _line(buffer, dropping)


def _line(buffer: bytearray, dropped: int) -> OutputLine:
    if buffer.endswith(b"\r"):
        del buffer[-1]
    return OutputLine(buffer.decode("utf-8", errors="replace"), dropped)
