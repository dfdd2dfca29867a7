"""A workflow the person picks reaches the agent, in every runner and every ACP preset, with the real agent on its
scripted model (loopback only): its commands and skills run as commands, its sub-agents come in with ``@``, its
CLAUDE.md and skills are in the first request, as is the workspace root's instruction file each agent follows, each
once, the shell works in its folder (a script's relative path resolves; ``repos/`` is reachable), its
``.claude/settings.json`` allows nothing the person did not approve, and a switch to another workflow keeps each
thread's conversation and moves its next turn into the new folder (refused with 409 while a turn waits for a
person).

The workflows are written for this test in the shape of the platform's own (``ambient-code/workflows``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from git_remote import bare_repo, remotes_in
from pausing import ASK, WRITE, interrupts_of
from runners import ACP_RUNNERS, RUNNERS, named_runner

pytestmark = [pytest.mark.real_cli, pytest.mark.slow, pytest.mark.usefixtures("isolated_network")]

SESSION = "session-flow"
SPECS = {
    "flows/specs/.ambient/ambient.json": json.dumps({
        "name": "Spec writer", "description": "Writes specs", "systemPrompt": "Follow the spec method closely.",
        "startupPrompt": "Run the init script, then greet the person as the spec writer.",
        "artifactsDir": "artifacts/specs"}),
    "flows/specs/.claude/commands/spec.plan.md":
        "---\ndisplayName: Plan\ndescription: Plans a feature\n---\nPlanbody-marker: plan the feature $ARGUMENTS "
        "step by step; count with awk '{print $2}' as written.\n",
    "flows/specs/.claude/commands/spec.check.md": "---\ndescription: Checks the plan\n---\nCheckbody-marker.\n",
    "flows/specs/.claude/skills/assess/SKILL.md":
        "---\nname: assess\ndescription: Assesses a report, skilldesc-marker\n---\nAssessbody-marker: read it.\n",
    "flows/specs/.claude/agents/archie-architect.md":
        "---\nname: Archie (Architect) - Principal Architect\ndescription: Designs systems, archiedesc-marker\n"
        "tools: Read, Grep\n---\nArchiebody-marker: you design systems.\n",
    "flows/specs/CLAUDE.md": "Claudemd-marker: never force-push.\n",
    "flows/specs/scripts/init.sh": "pwd > init-ran.txt\n",
    "flows/specs/.claude/settings.json": json.dumps({"permissions": {"allow": ["Bash", "Write", "WebFetch"]}}),
}
TEAM = {
    "team/.ambient/ambient.json": json.dumps({"name": "Team", "description": "Team work",
                                             "systemPrompt": "Work as a team.", "startupPrompt": ""}),
    "team/.claude/commands/team.go.md": "---\ndescription: Goes\n---\nTeambody-marker: go with $ARGUMENTS.\n",
}


# The workspace root's instruction files, and which of them each agent follows (the runner carries those it does not
# read itself from a workflow's folder): each must reach the model once, the others not at all.
INSTRUCTION_FILES = ("GEMINI.md", "AGENTS.md", "CLAUDE.md", "QWEN.md")
FOLLOWS = {"gemini-cli": ("GEMINI.md",), "codex-sdk": ("AGENTS.md",), "claude": ("CLAUDE.md",),
           "acp-opencode": ("AGENTS.md",), "acp-claude-agent-acp": ("CLAUDE.md",),
           "acp-qwen-code": ("AGENTS.md", "QWEN.md"), "acp-codex-acp": ("AGENTS.md",)}
# the agent's own file tool (Codex has none: its shell reads)
READ_TOOL = {"claude": "Read", "acp-claude-agent-acp": "Read", "acp-opencode": "read", "gemini-cli": "read_file",
             "acp-qwen-code": "read_file"}
# what a prompt under ``ask`` makes the agent ask about, and the file it would make (codex-acp: an edit, its commands
# run in its read-only sandbox under ``ask``)
ASKED = {"acp-codex-acp": ("PATCH add the file", "hello.txt")}


def requests_since(runner: Any, start: int) -> str:
    return "\n".join(json.dumps(body) for body in runner.server.bodies()[start:] if isinstance(body, dict))


def last_turn_request(runner: Any, start: int) -> str:
    """The last request since ``start`` that offers the agent's tools (not a title request of its own): the whole
    conversation the model saw."""
    bodies = [body for body in runner.server.bodies()[start:] if isinstance(body, dict) and body.get("tools")]
    assert bodies, "no model request with tools"
    return json.dumps(bodies[-1])


async def wait_idle(runner: Any, thread_id: str) -> None:
    async with asyncio.timeout(120):
        while True:
            state = runner.harness.app.runtime.runs.thread(thread_id)
            if state is not None and state.active is None and not state.queue and state.log.last_seq:
                return
            await asyncio.sleep(0.05)


async def turn(runner: Any, text: str, props: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
    """One run of the session's thread: its events and every model request it made."""
    start = len(runner.server.bodies())
    events = await runner.harness.run(SESSION, text, props)
    return events, requests_since(runner, start)


@pytest.mark.parametrize("runner_type", (*RUNNERS, *ACP_RUNNERS))
async def test_a_workflow_reaches_the_agent(runner_type: str, tmp_path, monkeypatch) -> None:
    remotes = remotes_in(tmp_path)
    specs_url = bare_repo(remotes, "workflows", SPECS)
    team_url = bare_repo(remotes, "team-flows", TEAM)
    workspace = tmp_path / "workspace"
    (workspace / "repos" / "lib").mkdir(parents=True)
    (workspace / "repos" / "lib" / "NOTES.md").write_text("repo-note-marker\n")
    for name in INSTRUCTION_FILES:
        (workspace / name).write_text(f"Rootinstructions-marker from {name}.\n")
    async with named_runner(runner_type, tmp_path, monkeypatch, session_id=SESSION) as runner:
        client = runner.harness.client
        start = len(runner.server.bodies())
        runner.server.shell_command = "sh ./scripts/init.sh"  # what the startupPrompt's turn runs, from the folder
        selected = await client.post("/workflow", json={"gitUrl": specs_url, "branch": "main", "path": "flows/specs"})
        assert selected.status_code == 200, selected.text
        folder = workspace / "workflows" / "workflows"
        await wait_idle(runner, SESSION)  # the startupPrompt's turn: the workflow's preamble comes with it
        first = requests_since(runner, start)
        for part in ("Follow the spec method closely.", "Claudemd-marker", "skilldesc-marker", "archiedesc-marker",
                     f"Working directory: {folder}", str(workspace / "repos"), str(workspace / "artifacts" / "specs")):
            assert part in first, part
        seen = last_turn_request(runner, start)
        assert seen.count("Claudemd-marker") == 1  # the workflow's CLAUDE.md, once
        for name in INSTRUCTION_FILES:  # the root's instruction files the agent follows, once, wherever it works
            assert seen.count(f"Rootinstructions-marker from {name}") == (name in FOLLOWS[runner_type]), name
        assert (folder / "init-ran.txt").read_text().strip() == str(folder)  # the script's relative path resolved

        # /command with $ARGUMENTS: the body with the text; what the person typed stays in the thread
        events, sent = await turn(runner, "/spec.plan NOTOOL a todo app")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert "Planbody-marker: plan the feature NOTOOL a todo app step by step" in sent
        assert "awk '{print $2}'" in sent
        snapshot = [e for e in runner.logged(SESSION) if e["type"] == "MESSAGES_SNAPSHOT"][-1]
        assert "/spec.plan NOTOOL a todo app" in [m.get("content") for m in snapshot["messages"]]
        # without $ARGUMENTS: appended as Claude Code appends them; a skill runs like a command
        _, sent = await turn(runner, "/spec.check NOTOOL now")
        assert "Checkbody-marker.\\n\\nARGUMENTS: NOTOOL now" in sent
        _, sent = await turn(runner, "/assess NOTOOL the crash report")
        assert "Assessbody-marker: read it." in sent and "ARGUMENTS: NOTOOL the crash report" in sent
        _, sent = await turn(runner, "@Archie (Architect) NOTOOL review the design")
        assert "Archiebody-marker: you design systems." in sent

        # the shell works in the workflow's folder, and repos/ is reachable from it
        runner.server.shell_command = f"cat {workspace}/repos/lib/NOTES.md > notes.txt"
        events, _ = await turn(runner, "Copy the notes")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert (folder / "notes.txt").read_text() == "repo-note-marker\n"

        if runner_type in READ_TOOL:  # the agent's own file tool reads repos/ (Codex has none: its shell did)
            runner.server.read_path = str(workspace / "repos" / "lib" / "NOTES.md")
            events, sent = await turn(runner, "Read the notes")
            runner.server.read_path = None
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
            assert [e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"] == [READ_TOOL[runner_type]]
            assert "repo-note-marker" in sent  # the file's text went back to the model as the tool's result

        # the workflow's settings allow Bash: under approvalPolicy ask it still asks
        runner.server.shell_command = "echo hello > out.txt"
        prompt, made = ASKED.get(runner_type, (WRITE, "out.txt"))
        events, _ = await turn(runner, prompt, ASK)
        assert len(interrupts_of(events)) == 1
        refused = await client.post("/workflow", json={"gitUrl": team_url, "branch": "main", "path": "team"})
        assert refused.status_code == 409 and refused.json()["code"] == "RUN_ACTIVE", refused.text
        assert (folder / ".claude" / "commands" / "spec.plan.md").is_file()  # nothing changed
        events, _ = await turn(runner, "NOTOOL never mind")
        assert events[-1]["type"] == "RUN_FINISHED" and not (folder / made).exists()

        runner.server.shell_command = "echo tangerine > tangerine.txt"
        other = await runner.harness.run("thread-2", "Write the word tangerine")  # a second thread
        assert other[-1]["type"] == "RUN_FINISHED" and (folder / "tangerine.txt").is_file(), other[-1]

        # a switch: the conversation goes on, in the new folder, with the new workflow's commands
        switched = await client.post("/workflow", json={"gitUrl": team_url, "branch": "main", "path": "team"})
        assert switched.status_code == 200, switched.text
        team = workspace / "workflows" / "team-flows"
        events, sent = await turn(runner, "/team.go NOTOOL the next step")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert "Teambody-marker: go with NOTOOL the next step." in sent and "Work as a team." in sent
        assert f"Working directory: {team}" in sent
        assert "a todo app" in sent  # an earlier turn of the thread: the conversation was kept
        runner.server.shell_command = "pwd > where.txt"
        events, _ = await turn(runner, "Where are you now?")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert (team / "where.txt").read_text().strip() == str(team)
        # the other thread too: its conversation kept, its commands in the new folder
        start = len(runner.server.bodies())
        runner.server.shell_command = "pwd > where-2.txt"
        events = await runner.harness.run("thread-2", "Where is the second thread?")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert (team / "where-2.txt").read_text().strip() == str(team)
        assert "Write the word tangerine" in requests_since(runner, start)


@pytest.mark.parametrize("turn_before", [True, False], ids=["a-turn-before", "at-once"])
@pytest.mark.parametrize("runner_type", ACP_RUNNERS)
async def test_a_thread_moved_by_a_switch_goes_on_there_after_a_restart(runner_type: str, turn_before: bool, tmp_path,
                                                                        monkeypatch) -> None:
    """A switch, then the pod's agent started again on the same state dir (a turn in the new folder before it, or
    none): the thread's next turn still runs in the new folder and its model still has the conversation (each
    session's folder is kept beside the session map)."""
    remotes = remotes_in(tmp_path)
    first_url = bare_repo(remotes, "workflows", {"first/.ambient/ambient.json": json.dumps({
        "name": "First", "systemPrompt": "Work first.", "startupPrompt": ""})})
    team_url = bare_repo(remotes, "team-flows", TEAM)
    team = tmp_path / "workspace" / "workflows" / "team-flows"
    async with named_runner(runner_type, tmp_path, monkeypatch) as runner:
        client = runner.harness.client
        assert (await client.post("/workflow", json={"gitUrl": first_url, "branch": "main",
                                                     "path": "first"})).status_code == 200
        runner.server.shell_command = "echo tangerine > tangerine.txt"
        events = await runner.harness.run("t-move", "Write the word tangerine")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert (await client.post("/workflow", json={"gitUrl": team_url, "branch": "main",
                                                     "path": "team"})).status_code == 200
        if turn_before:
            events = await runner.harness.run("t-move", "NOTOOL in the new folder")
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    async with named_runner(runner_type, tmp_path, monkeypatch) as again:  # the same state dir and workspace
        assert (await again.harness.client.post("/workflow", json={"gitUrl": team_url, "branch": "main",
                                                                   "path": "team"})).status_code == 200
        again.server.shell_command = "pwd > where.txt"
        events = await again.harness.run("t-move", "Where are you now?")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert (team / "where.txt").read_text().strip() == str(team)
        assert "Write the word tangerine" in requests_since(again, 0)
