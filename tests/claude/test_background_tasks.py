"""Claude's background tasks with the real CLI on its scripted model: a background Bash command is a task the run's
stream announces (task:started), whose end reaches the between-run listener (task:completed) after the run, whose
output can be read and which can be stopped (task:completed with status stopped); GET /tasks lists them. The
CLI's own turn after a task ends (it tells the model) does not pass for the next run's."""

from __future__ import annotations

import asyncio
import json

import pytest
from runners import scripted_runner

pytestmark = pytest.mark.real_cli


async def listen(client, thread_id: str, count: int, into: list[dict]) -> None:
    async with client.stream("GET", f"/events/{thread_id}") as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                into.append(json.loads(line[6:]))
                if len(into) >= count:
                    return


async def test_a_background_command_is_a_task(tmp_path, monkeypatch, isolated_network):
    async with scripted_runner("claude", tmp_path, monkeypatch) as runner:
        harness, server = runner.harness, runner.server
        client = harness.client
        between: list[dict] = []
        listener = asyncio.create_task(listen(client, "t1", 1, between))
        async with asyncio.timeout(10):
            while not harness.app.runtime.runs.between_runs.listeners:
                await asyncio.sleep(0.01)

        server.background_command = "sleep 1; echo background done"
        events = await harness.run("t1", "BACKGROUND please")
        started = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "task:started"]
        assert len(started) == 1, [e["type"] for e in events]
        task_id = started[0]["value"]["task_id"]
        assert started[0]["value"] == {"task_id": task_id, "description": "run the scripted background command",
                                       "task_type": "local_bash"}
        assert not [e for e in events if e["type"] == "RAW" and "task" in json.dumps(e)]  # no raw copies

        async with asyncio.timeout(60):
            await listener  # the task ended after the run: its news came between runs
        (completed,) = between
        assert completed["type"] == "CUSTOM" and completed["name"] == "task:completed"
        assert completed["value"]["task_id"] == task_id and completed["value"]["status"] == "completed"
        assert "completed" in completed["value"]["summary"]

        listed = (await client.get("/tasks")).json()["tasks"]
        assert [(t["task_id"], t["status"], t["thread_id"]) for t in listed] == [(task_id, "completed", "t1")]
        output = (await client.get(f"/tasks/{task_id}/output")).json()
        assert output["task_id"] == task_id
        assert output["output"][0] == {"type": "text", "text": "background done"}  # then Claude's exit-code line
        assert (await client.post(f"/tasks/{task_id}/stop")).status_code == 409
        assert (await client.get("/tasks/nope/output")).status_code == 404
        assert (await client.post("/tasks/nope/stop")).status_code == 404

        # The CLI answers the finished task by itself (a turn of its own); a run sent while that turn goes on waits
        # for it and gets its own answer, not that turn's.
        session = runner.bridge._clients["t1"]  # noqa: SLF001 - the test waits for Claude's own turn to end
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(60):
            while not any("<task-notification>" in json.dumps(r.body) for r in server.requests):
                await asyncio.sleep(0.005)
            # The model has the notification; the runner learns of Claude's own turn only from its first message,
            # a moment later: wait for that turn to be seen running and then ended (or, if it came and went
            # between two looks, for a bound past it).
            busy_seen, bound = False, loop.time() + 10
            while True:
                if not session._idle.is_set():  # noqa: SLF001
                    busy_seen = True
                elif busy_seen or loop.time() > bound:
                    break
                await asyncio.sleep(0.005)
        plain = await harness.run("t1", "NOTOOL anything new?")
        deltas = "".join(e.get("delta", "") for e in plain)
        assert deltas.startswith("Hello from the scripted model") and "Noted" not in deltas, plain

        server.background_command = "sleep 120"
        events = await harness.run("t1", "BACKGROUND a long one")
        started = [e for e in events if e.get("name") == "task:started"]
        assert started, [(e["type"], e.get("delta") or e.get("toolCallName")) for e in events]
        long_id = started[0]["value"]["task_id"]
        stopped: list[dict] = []
        listener = asyncio.create_task(listen(client, "t1", 1, stopped))
        async with asyncio.timeout(10):
            while not harness.app.runtime.runs.between_runs.listeners:
                await asyncio.sleep(0.01)
        answer = await client.post(f"/tasks/{long_id}/stop")
        assert answer.status_code == 200 and answer.json()["message"] == "Task stop signal sent"
        async with asyncio.timeout(60):
            await listener
        assert stopped[0]["name"] == "task:completed"
        assert stopped[0]["value"]["task_id"] == long_id and stopped[0]["value"]["status"] == "stopped"
        statuses = {t["task_id"]: t["status"] for t in (await client.get("/tasks")).json()["tasks"]}
        assert statuses == {task_id: "completed", long_id: "stopped"}
