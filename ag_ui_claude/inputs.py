"""What the adapter accepts: claude-agent-sdk ``Message`` objects, or the CLI's raw stream-json dicts.

Raw dicts are parsed with the SDK's own parser, so a recorded ``--output-format stream-json`` file replays
exactly like a live ``ClaudeSDKClient``. A dict the SDK does not know (a newer CLI's message kind) or cannot
parse is returned as :class:`Unparsed` and ends up as a ``RAW`` event, never an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ag_ui_claude.sdk_private import MessageParseError, parse_message

# Frames the SDK itself consumes (control protocol) or that only the SDK host asked for.
SILENT_TYPES = {"control_request", "control_response", "control_cancel_request", "keep_alive",
                "transcript_mirror"}


@dataclass(frozen=True)
class Unparsed:
    """A message the SDK could not turn into a typed ``Message``; kept as-is."""

    data: object  # the line's text, or the decoded (or handed) dict
    reason: str = "unknown message type"


def coerce(item: object) -> object:
    """SDK message -> itself; raw dict/JSON line -> SDK message, ``Unparsed`` or ``None`` (silent frame)."""
    if isinstance(item, (str, bytes)):
        text = item.decode("utf-8", "replace") if isinstance(item, bytes) else item
        if not text.strip():
            return None
        try:
            item = json.loads(text)
        except ValueError:
            return Unparsed(text, "not JSON")
    if not isinstance(item, dict):
        return item
    kind = item.get("type")
    if kind in SILENT_TYPES:
        return None
    if kind == "system" and item.get("sdk_host_only") is True:
        return None
    try:
        message = parse_message(item)
    except MessageParseError as exc:
        return Unparsed(item, str(exc))
    return message if message is not None else Unparsed(item)
