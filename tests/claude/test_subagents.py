"""Claude's foreground sub-agent (its ``Agent`` tool, the scripted model taught to call it with
``run_in_background: false``) as an AG-UI 1.0 sub-agent segment, with the real CLI: SUBAGENT_STARTED tied to the
call, every event of the sub-agent's own shell call carrying its ``subagentRunId``, SUBAGENT_FINISHED before the
call's result; it is not also a background task, and the run's MESSAGES_SNAPSHOT keeps the parent's view only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import RunnerHarness

from ambient_runner.bridges.claude.bridge import ClaudeBridge
from tests.claude.helpers import make_settings

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]


def segment(events: list[dict[str, Any]], run: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("subagentRunId") == run]


async def test_a_foreground_sub_agent_is_one_well_nested_segment(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    bridge = ClaudeBridge(settings)
    async with RunnerHarness(bridge, runner_type="claude", workspace_path=settings.workspace_path,
                             runner_state_root=settings.runner_state_root, runner_scripted_model=True) as runner:
        events = await runner.run("t-sub", "SUBAGENT look around")
        tasks = (await runner.client.get("/tasks")).json()
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    agent_call = next(e for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallName"] == "Agent")
    assert "subagentRunId" not in agent_call
    (started,) = [e for e in events if e["type"] == "SUBAGENT_STARTED"]
    run = started["subagentRunId"]
    assert started["parentToolCallId"] == agent_call["toolCallId"]
    assert started["name"] == "general-purpose" and started["description"] == "scripted sub-agent"

    inside = segment(events, run)
    assert inside[0] is started and inside[-1]["type"] == "SUBAGENT_FINISHED"
    shell = [e for e in inside if e["type"].startswith("TOOL_CALL_")]
    assert [e["type"] for e in shell] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert shell[0]["toolCallName"] == "Bash"
    assert all(e["metadata"] == {"parentToolCallId": agent_call["toolCallId"]} for e in shell)

    order = [e["type"] for e in events]
    agent_result = next(i for i, e in enumerate(events) if e["type"] == "TOOL_CALL_RESULT"
                        and e["toolCallId"] == agent_call["toolCallId"])
    assert order.index("SUBAGENT_STARTED") < events.index(inside[-1]) < agent_result
    # Everything between the segment's start and end belongs to it (the parent waits on its call).
    start_at, end_at = events.index(started), events.index(inside[-1])
    assert all(e.get("subagentRunId") == run for e in events[start_at:end_at + 1])

    assert tasks == {"tasks": []}  # not a background task too
    snapshot = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")
    calls = [c["function"]["name"] for m in snapshot["messages"] for c in m.get("toolCalls", [])]
    assert calls == ["Agent"]
