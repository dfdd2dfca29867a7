"""Workflows through the platform's calls, with the real Gemini CLI on its scripted model: POST /workflow clones a
workflow from a bare repository on this machine, answers at once when it is already active (the operator calls
it every ~5 s), its startupPrompt runs as a turn of its own and its systemPrompt reaches the next turn of each
thread; GET /content/workflow-metadata reads it; one that cannot be fetched is a 502 naming why."""

from __future__ import annotations

import asyncio
import json

import pytest
from git_remote import bare_repo, remotes_in
from runners import scripted_runner

SESSION = "session-wf"
AMBIENT = {"name": "Bug fixer", "description": "Fixes bugs", "systemPrompt": "Always answer like a pirate.",
           "startupPrompt": "NOTOOL Greet the user as the bug fixer.", "artifactsDir": "artifacts",
           "rubric": {"activationPrompt": "grade it"}}
FILES = {
    "flows/bugs/.ambient/ambient.json": json.dumps(AMBIENT),
    "flows/bugs/.claude/commands/fix.md": "---\ndisplayName: Fix a bug\ndescription: Finds and fixes\norder: 2\n---\n",
    "flows/bugs/.claude/commands/triage.md": "---\ndescription: Sorts issues\norder: 1\n---\nbody\n",
    "flows/bugs/.claude/agents/reviewer.md": "---\nname: Reviewer\ndescription: Reviews\ntools: Read, Grep\n---\n",
    "README.md": "workflows\n",
}


def texts(server) -> list[str]:
    return [json.dumps(r.body) for r in server.requests if isinstance(r.body, dict)]


async def wait_idle(runner, thread_id: str) -> None:
    async with asyncio.timeout(120):
        while True:
            state = runner.harness.app.runtime.runs.thread(thread_id)
            if state is not None and state.active is None and state.log.last_seq:
                return
            await asyncio.sleep(0.05)


@pytest.mark.real_cli
async def test_a_workflow_selected_at_run_time(tmp_path, monkeypatch, isolated_network):
    url = bare_repo(remotes_in(tmp_path), "workflows", FILES)
    async with scripted_runner("gemini-cli", tmp_path, monkeypatch, session_id=SESSION) as runner:
        client = runner.harness.client
        empty = (await client.get("/content/workflow-metadata", params={"session": SESSION})).json()
        assert empty == {"commands": [], "agents": [], "config": {"name": "", "description": "", "systemPrompt": "",
                                                                   "artifactsDir": ""}}
        body = {"gitUrl": url, "branch": "main", "path": "flows/bugs"}
        selected = await client.post("/workflow", json=body)
        assert selected.status_code == 200, selected.text
        assert selected.json()["message"] == "Workflow updated"
        assert selected.json()["directory"] == "/workflows/workflows"  # named as the platform's init container does
        folder = runner.settings.workspace_path / "workflows" / "workflows"
        assert (folder / ".ambient" / "ambient.json").is_file() and not (folder / "README.md").exists()

        await wait_idle(runner, SESSION)  # the startupPrompt's own turn, on the session's thread
        greeting = [t for t in texts(runner.server) if "Greet the user as the bug fixer" in t]
        assert greeting and "Always answer like a pirate." in greeting[0]
        events = runner.logged(SESSION)
        snapshot = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"][-1]
        assert snapshot["messages"][0]["metadata"] == {"hidden": True, "autoSent": True,
                                                       "source": "workflow_startup_prompt"}

        again = await client.post("/workflow", json=body)  # the operator's retry: at once, nothing re-run
        assert again.json()["message"] == "Workflow already active"
        assert runner.harness.app.runtime.runs.thread(SESSION).active is None

        meta = (await client.get("/content/workflow-metadata", params={"session": SESSION})).json()
        assert [(c["id"], c["name"], c["slashCommand"], c["order"]) for c in meta["commands"]] == [
            ("triage", "triage", "/triage", 1), ("fix", "Fix a bug", "/fix", 2)]
        assert meta["agents"] == [{"id": "reviewer", "name": "Reviewer", "description": "Reviews",
                                   "tools": "Read, Grep"}]
        assert meta["config"] == {"name": "Bug fixer", "description": "Fixes bugs",
                                  "systemPrompt": "Always answer like a pirate.", "artifactsDir": "artifacts",
                                  "rubric": {"activationPrompt": "grade it"}}

        # Another thread's next turn gets the workflow's instructions, once.
        before = len(runner.server.requests)
        await runner.harness.run("t2", "NOTOOL first question")
        first = [t for t in texts(runner.server)[before:] if "first question" in t]
        assert first and "Always answer like a pirate." in first[0]
        assert runner.harness.app.runtime.workflows.instructions_for("t2") == ""

        broken = await client.post("/workflow", json={"gitUrl": f"file://{remotes_in(tmp_path)}/none.git",
                                                             "branch": "main"})
        assert broken.status_code == 502 and broken.json()["code"] == "GIT_FAILED"
        assert "none.git" in broken.json()["error"]
        missing_folder = await client.post("/workflow", json={**body, "path": "flows/nothing"})
        assert missing_folder.status_code == 400
        assert (await client.get("/health")).status_code == 200
        assert (folder / ".ambient" / "ambient.json").is_file()  # the active workflow is untouched
