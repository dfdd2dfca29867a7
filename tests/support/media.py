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
    responses or Gemini generateContent), decoded."""
    found: list[tuple[str, bytes]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            source = value.get("source")
            if value.get("type") in ("image", "document") and isinstance(source, dict) and "data" in source:
                found.append((source["media_type"], base64.b64decode(source["data"])))
            elif value.get("type") == "input_image" and str(value.get("image_url", "")).startswith("data:"):
                head, _, data = value["image_url"].partition(",")
                found.append((head.removeprefix("data:").split(";")[0], base64.b64decode(data)))
            elif isinstance(value.get("inlineData"), dict):
                inline = value["inlineData"]
                found.append((inline["mimeType"], base64.b64decode(inline["data"])))
            else:
                for item in value.values():
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body)
    return found
