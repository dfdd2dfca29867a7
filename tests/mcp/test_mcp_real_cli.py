"""MCP servers with each real CLI on its scripted model, through the real service (RunnerHarness).

The runner-level configuration (``MCP_SERVERS_JSON``) names a small stdio MCP server written for these tests
(``echo_server.py``); the scripted model's ``MCPTOOL:echo.say`` prompt makes the CLI call its tool. The secret
the server gets through an ``${VAR}`` reference must reach it, and never a file in the state dir or an event.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_report import settled_mcp_status
from runner_kits import RUNNERS, clean_credentials, files_containing, runner_kit

pytestmark = [pytest.mark.real_cli, pytest.mark.parametrize("runner_type", RUNNERS)]

ECHO_SERVER = Path(__file__).parent / "echo_server.py"
SECRET = "mcp-test-secret-4c1d9e7a"
SECRET_HASH = hashlib.sha256(SECRET.encode()).hexdigest()[:12]


def mcp_json(**servers: dict[str, Any]) -> str:
    return json.dumps({"mcpServers": servers})


def echo_server() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(ECHO_SERVER)], "env": {"ECHO_SECRET": "${MCP_TEST_SECRET}"}}


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_credentials(monkeypatch)
    monkeypatch.setenv("MCP_TEST_SECRET", SECRET)


async def test_mcp_tool_call_and_result_reach_the_client(runner_type: str, tmp_path: Path,
                                                         isolated_network: None) -> None:
    async with runner_kit(runner_type, tmp_path, mcp_servers_json=mcp_json(echo=echo_server())) as kit:
        events = await kit.runner.run("t-mcp", "MCPTOOL:echo.say please")
        status = {"servers": await settled_mcp_status(kit.runner.client)}
    starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert [e["toolCallName"] for e in starts] == ["mcp__echo__say"], starts
    call_id = starts[0]["toolCallId"]
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == call_id)
    assert json.loads(args or "{}") in ({}, {"text": "hello"})
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert len(results) == 1 and results[0]["toolCallId"] == call_id
    # the ${MCP_TEST_SECRET} reference reached the server (it answers with the secret's hash)
    assert f"echo: hello [secret sha256:{SECRET_HASH}]" in results[0]["content"]
    assert events[-1]["type"] == "RUN_FINISHED"
    assert SECRET not in json.dumps(events)
    assert files_containing(kit.settings.runner_state_root, SECRET) == []
    assert [(s["name"], s["transport"], s["status"]) for s in status["servers"]] == [
        ("echo", "stdio", "connected")], status


async def test_a_server_that_exits_at_once_does_not_hang_the_run(runner_type: str, tmp_path: Path,
                                                                 isolated_network: None) -> None:
    broken = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
    config = mcp_json(broken=broken, echo=echo_server())
    async with runner_kit(runner_type, tmp_path, mcp_servers_json=config) as kit:
        plain = await kit.runner.run("t-broken", "NOTOOL hello")
        call = await kit.runner.run("t-broken", "MCPTOOL:echo.say still works")
        status = {s["name"]: s for s in await settled_mcp_status(kit.runner.client)}
        platform = (await kit.runner.client.get("/mcp/status")).json()  # the platform backend's call (the same report)
    assert platform["totalCount"] == 2
    assert {s["name"]: (s["displayName"], s["status"]) for s in platform["servers"]} == {
        "echo": ("echo", "connected"), "broken": ("broken", "error")}, platform
    assert plain[-1]["type"] == "RUN_FINISHED", plain[-1]
    assert call[-1]["type"] == "RUN_FINISHED", call[-1]
    result = next(e for e in call if e["type"] == "TOOL_CALL_RESULT")
    assert "echo: hello" in result["content"]
    assert status["echo"]["status"] == "connected", status
    assert status["broken"]["status"] == "failed", status
