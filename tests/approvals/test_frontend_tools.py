"""The application's own tools (``RunAgentInput.tools``) with each real CLI that takes them: Claude through the
runner's in-process MCP server, Codex as the thread's dynamic tools. The call is streamed under the tool's own name,
the run ends with ``pendingToolCallIds``, and the next run's tool message is the result the model gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pausing import offline_kit

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]

FRONTEND_TOOL = {"name": "confirm_order", "description": "Ask the person to confirm the order in the page",
                 "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}}


def results_sent(bodies: list[Any]) -> str:
    """Every tool result the model was sent (Anthropic tool_result blocks, Responses function-call outputs)."""
    return json.dumps([part for body in bodies for key in ("messages", "input") for part in (body or {}).get(key, [])
                       if "tool_result" in json.dumps(part) or "function_call_output" in json.dumps(part)])


@pytest.mark.parametrize("runner_type", ["claude", "codex-sdk"])
async def test_a_frontend_tool_is_answered_by_the_next_run(runner_type: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    async with offline_kit(runner_type, tmp_path, monkeypatch) as kit:
        body = kit.runner.run_body("t-front", "MCPTOOL:frontend.confirm_order please")
        events = await kit.runner.post({**body, "tools": [FRONTEND_TOOL]})
        call = next(e for e in events if e["type"] == "TOOL_CALL_START")
        assert call["toolCallName"] == "confirm_order"  # its own name, not the CLI's
        assert events[-1]["type"] == "RUN_FINISHED"
        assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [call["toolCallId"]]}
        assert "TOOL_CALL_RESULT" not in [e["type"] for e in events]

        snapshot = next(e for e in reversed(events) if e["type"] == "MESSAGES_SNAPSHOT")
        result = {"id": "tool-result-1", "role": "tool", "toolCallId": call["toolCallId"], "content": "confirmed: 42"}
        resumed = await kit.runner.post({"threadId": "t-front", "messages": [*snapshot["messages"], result],
                                         "tools": [FRONTEND_TOOL]})
        shown = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
        assert shown["toolCallId"] == call["toolCallId"] and "confirmed: 42" in shown["content"]
        assert resumed[-1]["type"] == "RUN_FINISHED" and not resumed[-1].get("outcome")
        assert "confirmed: 42" in results_sent(kit.bridge.scripted.bodies())
