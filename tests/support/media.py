"""Small real images and documents for the attachment tests, and what a scripted model server received of them."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any


def png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A valid PNG of one colour (small enough that no CLI resizes it)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def jpeg(rgb: tuple[int, int, int] = (20, 160, 60)) -> bytes:
    """A valid baseline JPEG of one 8x8 block of one colour: unit quantisation, so each component's block is its DC
    coefficient alone; Huffman tables of the 12 DC categories (4-bit codes) and the end-of-block code alone."""
    r, g, b = rgb
    ycbcr = (0.299 * r + 0.587 * g + 0.114 * b, 128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
             128 + 0.5 * r - 0.418688 * g - 0.081312 * b)
    bits: list[int] = []
    for value in ycbcr:
        dc = 8 * (min(255, max(0, round(value))) - 128)  # the DC coefficient of a flat block
        size = abs(dc).bit_length()
        bits += [int(c) for c in f"{size:04b}"]  # the category's code (category n: n in 4 bits)
        if size:
            bits += [int(c) for c in f"{dc if dc > 0 else dc + (1 << size) - 1:0{size}b}"]
        bits.append(0)  # end of block: every AC coefficient is 0
    bits += [1] * (-len(bits) % 8)
    scan = bytes(int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8)).replace(b"\xff", b"\xff\x00")

    def segment(marker: int, body: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(body) + 2) + body

    tables = (b"\x00" + bytes([0, 0, 0, 12] + [0] * 12) + bytes(range(12))  # DC: 12 codes of 4 bits
              + b"\x10" + bytes([1] + [0] * 15) + b"\x00")  # AC: one code of 1 bit, end of block
    frame = struct.pack(">BHHB", 8, 8, 8, 3) + b"".join(bytes([i, 0x11, 0]) for i in (1, 2, 3))
    scan_header = b"\x03" + b"".join(bytes([i, 0]) for i in (1, 2, 3)) + b"\x00\x3f\x00"
    return (b"\xff\xd8" + segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
            + segment(0xDB, b"\x00" + b"\x01" * 64) + segment(0xC0, frame) + segment(0xC4, tables)
            + segment(0xDA, scan_header) + scan + b"\xff\xd9")


def webp(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (150, 40, 200)) -> bytes:
    """A valid lossless WebP of one colour: no transform, no colour cache, each of its five prefix codes a simple
    code of one symbol (zero bits a pixel)."""
    value, count = 0, 0

    def put(number: int, width_bits: int) -> None:  # least significant bit first
        nonlocal value, count
        value |= number << count
        count += width_bits

    put(width - 1, 14)
    put(height - 1, 14)
    put(0, 1)  # no alpha
    put(0, 3)  # version 0
    put(0, 1)  # no transform
    put(0, 1)  # no colour cache
    put(0, 1)  # no meta prefix codes
    for symbol in (rgb[1], rgb[0], rgb[2], 255, 0):  # green, red, blue, alpha, distance
        put(1, 1)  # a simple code
        put(0, 1)  # of one symbol
        put(1, 1)  # of 8 bits
        put(symbol, 8)
    data = b"\x2f" + value.to_bytes((count + 7) // 8, "little")
    chunk = b"VP8L" + struct.pack("<I", len(data)) + data + b"\x00" * (len(data) % 2)
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def pdf(text: str = "ATTACHED PDF") -> bytes:
    """A one-page PDF with ``text`` on it, its cross-reference table computed."""
    stream = f"BT /F1 18 Tf 20 100 Td ({text}) Tj ET".encode()
    objects = [b"<</Type/Catalog/Pages 2 0 R>>", b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
               b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 200]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>",
               b"<</Length %d>>stream\n" % len(stream) + stream + b"\nendstream",
               b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj" % number + body + b"endobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def data_part(kind: str, mime_type: str, data: bytes) -> dict[str, Any]:
    return {"type": kind, "source": {"type": "data", "mimeType": mime_type,
                                     "value": base64.b64encode(data).decode()}}


def url_part(kind: str, url: str, mime_type: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"type": "url", "value": url}
    if mime_type:
        source["mimeType"] = mime_type
    return {"type": kind, "source": source}


def received_media(body: Any) -> list[tuple[str, bytes]]:
    """``(mime type, bytes)`` of every image / document in a model request body (Anthropic messages, OpenAI
    responses or chat completions, Gemini generateContent), decoded."""
    return [(mime_type, data) for _, mime_type, data in received_media_forms(body)]


def _data_url(url: str) -> tuple[str, bytes]:
    head, _, data = url.partition(",")
    return head.removeprefix("data:").split(";")[0], base64.b64decode(data)


def received_media_forms(body: Any) -> list[tuple[str, str, bytes]]:
    """``(form, mime type, bytes)`` of every image / document in a model request body, in order, ``form`` the API's
    own: ``source`` (Anthropic's base64 source), ``input_image`` (OpenAI Responses), ``image_url`` (OpenAI Chat
    Completions), ``inlineData`` (Gemini)."""
    found: list[tuple[str, str, bytes]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            source = value.get("source")
            image_url = value.get("image_url")
            if value.get("type") in ("image", "document") and isinstance(source, dict) and "data" in source:
                found.append(("source", source["media_type"], base64.b64decode(source["data"])))
            elif value.get("type") == "input_image" and str(image_url or "").startswith("data:"):
                found.append(("input_image", *_data_url(str(image_url))))
            elif value.get("type") == "image_url" and isinstance(image_url, dict) and \
                    str(image_url.get("url", "")).startswith("data:"):
                found.append(("image_url", *_data_url(str(image_url["url"]))))
            elif isinstance(value.get("inlineData"), dict):
                inline = value["inlineData"]
                found.append(("inlineData", inline["mimeType"], base64.b64decode(inline["data"])))
            else:
                for item in value.values():
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body)
    return found
