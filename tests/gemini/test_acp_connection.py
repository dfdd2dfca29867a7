"""The ACP channel to ``gemini --acp`` (``AcpConnection``) against a small peer process that speaks JSON-RPC on stdio.

A turn's prompt is written when ``send_request`` returns, before the caller's next await (so the CLI starts on it
while the runner builds the HTTP response); the reply comes through ``reply``; a CLI that is gone fails the reply
with ``AcpClosed`` saying how it ended, never a hang.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from ag_ui_gemini_cli.acp_schema import ContentBlock, PromptParams, PromptResult
from ambient_runner.bridges.acp_client.connection import AcpClosed, AcpConnection
from ambient_runner.process.environment import cli_environment
from ambient_runner.process.supervisor import SupervisedProcess

# Answers each request with its own method and params once it has read the whole line; "quit" ends the process.
PEER = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "quit":
        sys.exit(3)
    result = {"stopReason": "end_turn", "_meta": {"echo": message["params"]}}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


async def peer(tmp_path: Path) -> AcpConnection:
    process = await SupervisedProcess.start([sys.executable, "-c", PEER], cwd=tmp_path, env=cli_environment({}),
                                            stdin_pipe=True)
    return AcpConnection(process, on_notification=lambda message: None, on_request=lambda *request: None)


def prompt(text: str) -> PromptParams:
    return PromptParams(session_id="s1", prompt=[ContentBlock(type="text", text=text)])


async def test_a_request_is_on_the_pipe_when_send_request_returns(tmp_path: Path) -> None:
    connection = await peer(tmp_path)
    try:
        stdin = connection.process._proc.stdin
        assert stdin is not None
        sent = connection.send_request("session/prompt", prompt("hello"))
        # No await since: the bytes are with the kernel's pipe already, nothing waits in the transport's buffer.
        assert stdin.transport.get_write_buffer_size() == 0
        result = await connection.reply(sent, PromptResult)
        assert result.stop_reason == "end_turn"
        assert result.model_dump(by_alias=True)["_meta"]["echo"] == {
            "sessionId": "s1", "prompt": [{"type": "text", "text": "hello"}]}
    finally:
        await connection.process.stop()


async def test_a_prompt_larger_than_the_pipe_is_sent_whole(tmp_path: Path) -> None:
    connection = await peer(tmp_path)
    try:
        text = "x" * 1_000_000  # 16 pipe buffers: the rest is written while reply() waits
        result = await connection.reply(connection.send_request("session/prompt", prompt(text)), PromptResult)
        assert result.model_dump(by_alias=True)["_meta"]["echo"]["prompt"][0]["text"] == text
    finally:
        await connection.process.stop()


async def test_requests_keep_their_own_replies(tmp_path: Path) -> None:
    connection = await peer(tmp_path)
    try:
        first = connection.send_request("session/prompt", prompt("one"))
        second = connection.send_request("session/prompt", prompt("two"))
        results = await asyncio.gather(connection.reply(second, PromptResult), connection.reply(first, PromptResult))
        assert [r.model_dump(by_alias=True)["_meta"]["echo"]["prompt"][0]["text"] for r in results] == ["two", "one"]
    finally:
        await connection.process.stop()


async def test_a_request_to_a_cli_that_ended_fails_with_how_it_ended(tmp_path: Path) -> None:
    connection = await peer(tmp_path)
    try:
        await connection.notify("quit", prompt(""))  # the peer exits 3 without reading what comes after
        waiting = asyncio.ensure_future(connection.request("session/prompt", prompt("never read"), PromptResult))
        closed = await asyncio.wait_for(connection.closed(), 10)
        assert "exited with code 3" in closed.message
        late = connection.send_request("session/prompt", prompt("too late"))
        for pending in (waiting, connection.reply(late, PromptResult)):  # waiting when it ended; sent after
            with pytest.raises(AcpClosed) as raised:
                await asyncio.wait_for(pending, 10)
            assert raised.value.message == closed.message
    finally:
        await connection.process.stop()
