"""The new AG-UI 1.0 streams through the official TypeScript client (``@ag-ui/client`` 1.0.0 ``HttpAgent``), each
runner with its real CLI on its scripted model: the client accepts the stream (its own verification) and ends with
the messages and state a user of it expects. Images in (Gemini), a sub-agent segment (Claude), the plan beside the
client's own state (Codex)."""

from __future__ import annotations

from pathlib import Path

import pytest
from media import data_part, png
from runner_kits import clean_credentials, runner_kit
from ts_client import approve_with_official_client, run_with_official_client

from ambient_runner.scripted_models.base import PLAN_STEPS

pytestmark = pytest.mark.real_cli


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_credentials(monkeypatch)


def user(content: object) -> dict:
    return {"id": "u1", "role": "user", "content": content}


async def test_an_image_run(tmp_path: Path, isolated_network: None) -> None:
    async with runner_kit("gemini-cli", tmp_path) as kit:
        run = await run_with_official_client(
            f"{kit.runner.base_url}/run", "t-image",
            [user([{"type": "text", "text": "NOTOOL what is this?"}, data_part("image", "image/png", png())])])
    assert run.ok, run.error
    assert run.events[0] == "RUN_STARTED" and run.events[-1] == "RUN_FINISHED"
    assert run.messages[0]["content"][1]["type"] == "image"  # the client's snapshot kept the user's part
    assert run.messages[-1]["role"] == "assistant"
    assert run.messages[-1]["content"] == "Hello from the scripted model. No tools were needed."


async def test_a_sub_agent_run(tmp_path: Path, isolated_network: None) -> None:
    async with runner_kit("claude", tmp_path) as kit:
        run = await run_with_official_client(f"{kit.runner.base_url}/run", "t-sub", [user("SUBAGENT look around")])
    assert run.ok, run.error
    assert run.events.count("SUBAGENT_STARTED") == 1 and run.events.count("SUBAGENT_FINISHED") == 1
    assert run.events.index("SUBAGENT_STARTED") < run.events.index("SUBAGENT_FINISHED")
    calls = [c["function"]["name"] for m in run.messages for c in m.get("toolCalls", [])]
    assert calls == ["Agent"]  # the sub-agent's own calls are its segment's, not the conversation's


async def test_the_plan_keeps_the_clients_state(tmp_path: Path, isolated_network: None) -> None:
    async with runner_kit("codex-sdk", tmp_path) as kit:
        run = await run_with_official_client(f"{kit.runner.base_url}/run", "t-plan", [user("UPDATEPLAN then go")],
                                             state={"document": {"title": "draft"}})
    assert run.ok, run.error
    assert "STATE_DELTA" in run.events and "STATE_SNAPSHOT" not in run.events
    steps = [{**s, "status": {"in_progress": "inProgress"}.get(s["status"], s["status"])} for s in PLAN_STEPS]
    assert run.state == {"document": {"title": "draft"},  # the app-server spells the statuses in camelCase
                         "plan": {"explanation": "The scripted plan.", "steps": steps}}


async def test_an_approval_resumed_by_the_official_client(tmp_path: Path, isolated_network: None) -> None:
    async with runner_kit("claude", tmp_path) as kit:
        flow = await approve_with_official_client(
            f"{kit.runner.base_url}/run", "t-approve", [user("Create out.txt with hello")],
            payload={"approved": True}, forwarded_props={"approvalPolicy": "ask"})
        assert flow["ok"], flow["error"]
        first, second = flow["runs"]
        assert first["events"][-1] == "RUN_FINISHED" and [i["reason"] for i in first["pending"]] == ["tool_approval"]
        assert second["events"][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and second["pending"] == []
        assert "TOOL_CALL_RESULT" in second["events"]
        assert (kit.settings.workspace_path / "out.txt").read_text().strip() == "hello"
    calls = [c["id"] for m in flow["messages"] for c in m.get("toolCalls", [])]
    results = [m["toolCallId"] for m in flow["messages"] if m["role"] == "tool"]
    assert sorted(calls) == sorted(results)  # every call answered once: the CLI's, and the question card (closed)
    assert [c for c in calls if not c.endswith("-ask")] == [first["pending"][0]["toolCallId"]]
