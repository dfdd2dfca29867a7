"""RUNNER_TYPE=acp with ACP_AGENT=custom: an ACP agent the runner has no preset for, started by ACP_AGENT_COMMAND and
given the model API's usual variables pointed at the model proxy (here Qwen Code on the OpenAI Chat Completions API:
``OPENAI_BASE_URL``, ``OPENAI_API_KEY``). Qwen also sends a request outside the ACP spec mid-turn, which the client
answers -32601 at once. The real agent, the scripted Chat Completions server, the loopback-only network namespace."""

from __future__ import annotations

from pathlib import Path

import pytest
from runners import scripted_runner

from ambient_runner.bridges.acp_client.connection import AcpConnection

pytestmark = [pytest.mark.real_cli, pytest.mark.slow, pytest.mark.usefixtures("isolated_network")]

QWEN = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "qwen"


async def test_a_custom_agent_runs_a_tool_call_through_the_proxy(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    command = f"{QWEN} --acp --auth-type openai --model gpt-4.1"
    refused: list[str] = []
    respond_error = AcpConnection.respond_error

    async def noted(self: AcpConnection, request_id: int | str | None, code: int, message: str) -> None:
        refused.append(f"{code} {message}")
        await respond_error(self, request_id, code, message)

    monkeypatch.setattr(AcpConnection, "respond_error", noted)
    async with scripted_runner("acp", tmp_path, monkeypatch, runner_approval_policy="auto", acp_agent="custom",
                               acp_agent_command=command) as runner:
        runner.server.shell_command = "echo from-a-custom-agent > custom.txt"
        events = await runner.harness.run("t-custom", "make the file")
        text = await runner.harness.run("t-custom", "NOTOOL thanks")
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert any(e["type"] == "TOOL_CALL_RESULT" for e in events)
    assert (runner.settings.workspace_path / "custom.txt").read_text() == "from-a-custom-agent\n"
    assert text[-1]["type"] == "RUN_FINISHED"
    assert "-32601 Method not found: craft/drainMidTurnQueue" in refused  # Qwen's request outside the spec
    assert runner.server.requests  # through the proxy, with the real key
    assert all({k.lower(): v for k, v in r.headers.items()}.get("authorization") == f"Bearer {runner.api_key}"
               for r in runner.server.requests)
