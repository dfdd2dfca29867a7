"""The Claude Agent SDK's private names the project uses (ag_ui_claude/sdk_private.py) exist in the installed,
pinned SDK with the parameters used; no other module touches them."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ClaudeSDKClient
from sdk_private_check import check_attribute, check_callable, gone, private_uses

from ag_ui_claude import sdk_private

SDK = "claude-agent-sdk"
MODULE = "ag_ui_claude/sdk_private.py"
PRIVATE = ("_errors", "_internal", "_query", "_message_receive", "_process")


def _private(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise gone(SDK, MODULE, f"{module}.{name} ({exc})") from exc


def test_the_private_imports_and_functions_are_there() -> None:
    parse_error = _private("claude_agent_sdk._errors", "MessageParseError")
    assert issubclass(parse_error, Exception)
    check_callable(SDK, MODULE, _private("claude_agent_sdk._internal.message_parser", "parse_message"), "", ["data"])
    transport = _private("claude_agent_sdk._internal.transport.subprocess_cli", "SubprocessCLITransport")
    check_callable(SDK, MODULE, transport, "__init__", ["prompt", "options"])  # WatchedTransport's super().__init__
    check_callable(SDK, MODULE, transport, "connect")
    check_callable(SDK, MODULE, transport, "_build_command")  # command_line (make bump's diff)
    check_callable(SDK, MODULE, _private("claude_agent_sdk._internal.query", "Query"), "receive_messages")

    message = sdk_private.parse_message({"type": "assistant", "message": {
        "role": "assistant", "model": "m", "content": [{"type": "text", "text": "hi"}]}})
    assert isinstance(message, AssistantMessage)
    with pytest.raises(sdk_private.MessageParseError):
        sdk_private.parse_message({"type": "assistant"})


async def _no_prompt() -> AsyncIterator[dict[str, Any]]:
    return
    yield {}


async def test_the_private_attributes_are_where_the_project_reads_them(tmp_path: Path) -> None:
    options = ClaudeAgentOptions(cli_path=tmp_path / "claude")
    transport = sdk_private.SubprocessCLITransport(prompt=_no_prompt(), options=options)
    assert check_attribute(SDK, MODULE, transport, "_process") is None  # the CLI's process, once spawned
    assert sdk_private.transport_process(transport) is None
    argv = sdk_private.command_line(transport)
    assert argv[0] == str(tmp_path / "claude") and "--output-format" in " ".join(argv)

    client = ClaudeSDKClient(options)
    assert check_attribute(SDK, MODULE, client, "_query") is None  # the control protocol, once connected
    assert sdk_private.raw_messages(client) is None and sdk_private.buffered_messages(client) == 0

    query_class = _private("claude_agent_sdk._internal.query", "Query")
    query = query_class(transport=transport, is_streaming_mode=True)
    receive = check_attribute(SDK, MODULE, query, "_message_receive")
    assert receive.statistics().current_buffer_used == 0  # what buffered_messages reads
    client._query = query  # as connect() sets it
    assert sdk_private.raw_messages(client) is not None and sdk_private.buffered_messages(client) == 0


def test_no_other_module_touches_the_claude_sdks_private_names() -> None:
    found = private_uses(PRIVATE, [MODULE])
    assert found == [], f"Claude SDK private names used outside {MODULE}:\n" + "\n".join(found)
