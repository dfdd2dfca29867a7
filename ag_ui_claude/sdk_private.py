"""Every use of the Claude Agent SDK's private names (``claude-agent-sdk``, pinned exactly in pyproject.toml), in one
place: the adapter's and the Claude bridge's (the bridge imports this module; the adapter cannot import the runner).

The SDK's public API has no way to: parse a raw stream-json message (a recording replays like a live client), keep
the CLI's process once a start fails (its transport drops it), read the CLI's messages as raw dicts (its public
iterator drops message kinds it does not know), see how many messages it has read but not handed on, or see the
command line its transport starts the CLI with (``make bump``'s protocol diff compares it between versions). Nothing
else in the project touches an underscore name of the SDK; ``tests/claude/test_sdk_private.py`` checks that each name
used here exists with the parameters used, and fails naming it and the pinned version when an SDK update changes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from claude_agent_sdk._errors import MessageParseError
from claude_agent_sdk._internal.message_parser import parse_message
from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

from ag_ui_cli_common.json_types import JsonObject

if TYPE_CHECKING:
    from anyio.abc import Process  # the SDK's own process type (anyio comes with the SDK)

__all__ = ["MessageParseError", "SubprocessCLITransport", "buffered_messages", "command_line", "parse_message",
           "raw_messages", "transport_process"]


def transport_process(transport: SubprocessCLITransport) -> Process | None:
    """The CLI's process as the transport holds it (``None`` before it is spawned or once the SDK let go of it)."""
    return getattr(transport, "_process", None)


def command_line(transport: SubprocessCLITransport) -> list[str]:
    """The command line the transport would start the CLI with (nothing is started)."""
    return list(transport._build_command())


def buffered_messages(client: object) -> int:
    """Messages the SDK has read from the CLI that nobody has taken yet (0 when it cannot say)."""
    receive = getattr(getattr(client, "_query", None), "_message_receive", None)
    try:
        return int(receive.statistics().current_buffer_used) if receive is not None else 0
    except Exception:  # noqa: BLE001 - an SDK without it: no ordering wait
        return 0


def raw_messages(client: object) -> AsyncIterator[JsonObject] | None:
    """The connected client's messages as the CLI wrote them (dicts), or ``None`` when it has no such stream."""
    query = getattr(client, "_query", None)
    if query is None or not hasattr(query, "receive_messages"):
        return None
    messages: AsyncIterator[JsonObject] = query.receive_messages()
    return messages
