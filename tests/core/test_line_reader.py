"""The bounded line reader on its own."""

from __future__ import annotations

import asyncio

from ambient_runner.process.line_reader import OutputLine, read_lines


async def lines_of(data: bytes, limit: int) -> list[OutputLine]:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return [line async for line in read_lines(reader, limit)]


async def test_lines_crlf_invalid_utf8_and_a_last_line_without_newline():
    assert await lines_of(b'{"a":1}\r\nplain\n\xff\xfeok\nlast', 100) == [
        OutputLine('{"a":1}'), OutputLine("plain"), OutputLine("\ufffd\ufffdok"), OutputLine("last")]


async def test_an_oversized_line_is_cut_and_the_next_line_survives():
    big = b"y" * 3_000_000
    lines = await lines_of(b"short\n" + big + b"\nnext\n", 1000)
    assert lines[0] == OutputLine("short")
    assert lines[1].text == "y" * 1000 and lines[1].dropped_bytes == 3_000_000 - 1000
    assert lines[2] == OutputLine("next")


async def test_a_line_exactly_at_the_limit_is_whole():
    assert await lines_of(b"z" * 1000 + b"\n", 1000) == [OutputLine("z" * 1000)]


async def test_an_oversized_last_line_without_newline():
    lines = await lines_of(b"q" * 5000, 1000)
    assert len(lines) == 1 and lines[0].dropped_bytes == 4000
