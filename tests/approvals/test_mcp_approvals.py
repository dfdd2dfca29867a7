"""Under ``approvalPolicy: ask`` an MCP tool waits for the person too (each real CLI with the test's echo MCP
server), and an approved call runs in the next run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pausing import ASK, answer, interrupts_of, is_cli_result, offline_kit

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]

ECHO = {"mcpServers": {"echo": {"command": sys.executable,
                                "args": [str(Path(__file__).parent.parent / "mcp" / "echo_server.py")]}}}


@pytest.mark.parametrize("runner_type", ["claude", "codex-sdk"])
async def test_an_mcp_tool_asks_and_runs_once_approved(runner_type: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async with offline_kit(runner_type, tmp_path, monkeypatch, mcp_servers_json=json.dumps(ECHO)) as kit:
        events = await kit.runner.run("t-mcp", "MCPTOOL:echo.say please", ASK)
        (interrupt,) = interrupts_of(events)
        call = next(e for e in events if e["type"] == "TOOL_CALL_START")
        assert call["toolCallName"] == "mcp__echo__say" and interrupt["toolCallId"] == call["toolCallId"]
        assert "TOOL_CALL_RESULT" not in [e["type"] for e in events]
        resumed = await kit.runner.post(answer("t-mcp", interrupt, True))
    result = next(e for e in resumed if is_cli_result(e))
    assert result["toolCallId"] == call["toolCallId"] and "echo: hello" in result["content"]
