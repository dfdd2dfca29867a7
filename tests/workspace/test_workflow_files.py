"""What a workflow gives the agent, read from its folder (``workspace.workflow_files``): commands expanded as the
pinned Claude Code expands a project command, skills, sub-agents matched as the platform's UI writes them, CLAUDE.md,
and nothing read through a link out of the workspace."""

from __future__ import annotations

import os
from pathlib import Path

from ambient_runner.workspace.paths import Workspace
from ambient_runner.workspace.workflow_files import WorkflowFiles, body_of, fill_arguments, split_arguments
from ambient_runner.workspace.workflows import CarriedInstructions, Workflows, WorkflowSpec

FILES = {
    ".claude/commands/spec.plan.md": "---\ndescription: Plans a feature\n---\nPlan this: $ARGUMENTS\n"
                                     "Then count with awk '{print $2}' as written; $ARGUMENTS again.\n",
    ".claude/commands/fix.md": "---\ndescription: positional\n---\nFix issue $0 in $1, not $2; \\$0 and "
                               "$ARGUMENTS[1] and $ARGUMENTS[7]; awk -F, '{print $1, $3}' f\n",
    ".claude/commands/spec.check.md": "---\ndescription: Checks\n---\nCheck the plan.\n",
    ".claude/commands/assess.md": "---\ndescription: a command named like a skill\n---\nThe command wins.\n",
    ".claude/skills/assess/SKILL.md": "---\nname: assess\ndescription: Assesses a report\n---\nRead the report.\n",
    ".claude/skills/diagnose/SKILL.md": "---\nname: diagnose\ndescription: Finds the cause\n---\nDiagnose it.\n",
    ".claude/skills/secret-step/SKILL.md": "---\nname: secret-step\ndescription: people only\n"
                                          "disable-model-invocation: true\n---\nOnly when asked.\n",
    ".claude/agents/archie-architect.md": "---\nname: Archie (Architect) - Principal Architect\n"
                                          "description: Designs systems\ntools: Read, Grep\n---\nYou design.\n",
    ".claude/agents/stella.md": "---\nname: Stella - Staff Engineer\ndescription: Builds\n---\nYou build.\n",
    "CLAUDE.md": "Never force-push.\n",
    ".claude/CLAUDE.md": "Write tests first.\n",
}


def workflow(tmp_path: Path, files: dict[str, str] = FILES) -> tuple[Workspace, Path]:
    root = tmp_path / "workspace"
    folder = root / "workflows" / "flows"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (root / "state").mkdir(parents=True)
    return Workspace.of(root, tmp_path / "state"), folder


def test_a_command_with_arguments_fills_each_placeholder_and_leaves_every_other_dollar(tmp_path: Path) -> None:
    found = WorkflowFiles.read(*workflow(tmp_path))
    expanded = found.expand("/spec.plan Build a todo app")
    assert expanded == ("<command-name>/spec.plan</command-name>\nPlan this: Build a todo app\n"
                        "Then count with awk '{print $2}' as written; Build a todo app again.")


def test_positional_placeholders_take_the_words_as_the_pinned_claude_code_does(tmp_path: Path) -> None:
    """``$0`` is the first word (Claude Code counts from 0), a missing word leaves its placeholder, ``\\$`` and an awk
    ``print`` program keep their ``$``; anything filled in means no ``ARGUMENTS:`` line."""
    found = WorkflowFiles.read(*workflow(tmp_path))
    assert found.expand('/fix 42 "the parser"') == (
        "<command-name>/fix</command-name>\nFix issue 42 in the parser, not $2; $0 and the parser and "
        "$ARGUMENTS[7]; awk -F, '{print $1, $3}' f")
    assert split_arguments('one "two three" four\\ five {"a": "b"}') == ["one", "two three", "four five",
                                                                         '{"a":', "b}"]
    assert fill_arguments("Use $1.", "$ARGUMENTS") == "Use $1.\n\nARGUMENTS: $ARGUMENTS"  # values are not read again


def test_a_command_without_a_placeholder_gets_the_arguments_appended_as_claude_code_does(tmp_path: Path) -> None:
    found = WorkflowFiles.read(*workflow(tmp_path))
    assert found.expand("/spec.check  now please") == (
        "<command-name>/spec.check</command-name>\nCheck the plan.\n\nARGUMENTS: now please")
    assert found.expand("/spec.check") == "<command-name>/spec.check</command-name>\nCheck the plan."
    assert fill_arguments("Body.", "") == "Body."


def test_a_skill_runs_like_a_command_and_a_command_of_the_same_name_wins(tmp_path: Path) -> None:
    found = WorkflowFiles.read(*workflow(tmp_path))
    skill_folder = tmp_path / "workspace" / "workflows" / "flows" / ".claude" / "skills" / "diagnose"
    assert found.expand("/diagnose the crash") == (
        f"<command-name>/diagnose</command-name>\nBase directory for this skill: {skill_folder}\n\n"
        "Diagnose it.\n\nARGUMENTS: the crash")
    assert "The command wins." in found.expand("/assess it")


def test_unknown_commands_and_plain_text_go_on_unchanged(tmp_path: Path) -> None:
    found = WorkflowFiles.read(*workflow(tmp_path))
    for text in ("/compact", "/spec.planned x", "please /spec.plan later", "no command", "/", "//spec.plan"):
        assert found.expand(text) == text


def test_sub_agents_are_matched_as_the_platform_ui_writes_them_and_by_file_id(tmp_path: Path) -> None:
    found = WorkflowFiles.read(*workflow(tmp_path))
    assert [a.mention for a in found.agents] == ["Archie (Architect)", "Stella"]
    by_name = found.expand("@Archie (Architect) review the design")
    assert by_name.startswith("@Archie (Architect) review the design\n\n<agent-instructions name=\"archie-architect\">")
    assert "You design." in by_name and "You build." not in by_name
    assert "You build." in found.expand("ask @stella please") and "You build." in found.expand("@STELLA")
    assert found.mentioned("mail archie@example.com or @stellar, ops@stella.io") == []
    assert [a.id for a in found.mentioned("@stellar first, then @Stella")] == ["stella"]
    both = found.expand("/spec.check with @archie-architect and @Stella")
    assert both.startswith("<command-name>/spec.check</command-name>")
    assert "You design." in both and "You build." in both


def test_the_listing_offers_skills_with_their_files_and_the_agents_but_not_people_only_skills(tmp_path: Path) -> None:
    workspace, folder = workflow(tmp_path)
    found = WorkflowFiles.read(workspace, folder)
    listing = found.listing()
    assert f"- assess: Assesses a report (file: {folder}/.claude/skills/assess/SKILL.md)" in listing
    assert "- diagnose: Finds the cause" in listing and "secret-step" not in listing
    assert "- @Archie (Architect) (archie-architect): Designs systems" in listing
    assert found.instructions == "Never force-push.\n\nWrite tests first."
    assert body_of("---\na: b\n---\nbody\n") == "body" and body_of("no front matter") == "no front matter"


def test_files_reached_through_a_link_out_of_the_workspace_are_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "commands").mkdir(parents=True)
    (outside / "commands" / "leak.md").write_text("SECRET BODY")
    (outside / "CLAUDE.md").write_text("SECRET INSTRUCTIONS")
    workspace, folder = workflow(tmp_path, {"README.md": "x"})
    (folder / ".claude").mkdir()
    os.symlink(outside / "commands", folder / ".claude" / "commands")
    os.symlink(outside / "CLAUDE.md", folder / "CLAUDE.md")
    found = WorkflowFiles.read(workspace, folder)
    assert found.commands == {} and found.instructions == ""
    assert found.expand("/leak now") == "/leak now"


def test_the_preamble_names_where_the_agent_works_once_per_thread_and_again_after_a_switch(tmp_path: Path) -> None:
    workspace, folder = workflow(tmp_path, {**FILES, ".ambient/ambient.json":
                                            '{"systemPrompt": "Follow the method.", "artifactsDir": "artifacts/x"}'})
    (workspace.root / "AGENTS.md").write_text("Root rules.")
    workflows = Workflows(workspace, WorkflowSpec("https://example.invalid/flows.git"),
                          CarriedInstructions(("AGENTS.md",)))
    place = workflows.place()
    assert place.cwd == folder and place.also == (workspace.root,)
    assert [a.id for a in place.agents] == ["archie-architect", "stella"]
    preamble = workflows.instructions_for("t1")
    assert f"Working directory: {folder} " in preamble and f"Workspace root: {workspace.root}\n" in preamble
    assert f"Repositories: {workspace.root / 'repos'}" in preamble
    assert f"Results (artifacts): {workspace.root / 'artifacts/x'}" in preamble
    assert "replaced when the person switches" in preamble
    for part in ("Follow the method.", "Never force-push.", "- assess: Assesses a report", "@Stella", "Root rules."):
        assert part in preamble
    assert workflows.instructions_for("t1") == ""
    workflows.changes += 1
    assert "Follow the method." in workflows.instructions_for("t1")
    assert workflows.expand("/spec.check") != "/spec.check" and workflows.expand("hi") == "hi"


def test_without_a_workflow_the_agent_works_in_the_workspace_root(tmp_path: Path) -> None:
    workspace, _ = workflow(tmp_path, {"README.md": "x"})
    workflows = Workflows(workspace)
    assert workflows.place().cwd == workspace.root and workflows.place().also == ()
    assert workflows.instructions_for("t1") == "" and workflows.expand("/spec.plan x") == "/spec.plan x"


def test_a_cli_that_reads_no_instruction_file_itself_gets_the_roots_without_a_workflow(tmp_path: Path) -> None:
    workspace, _ = workflow(tmp_path, {"README.md": "x"})
    (workspace.root / "AGENTS.md").write_text("Root rules.")
    assert Workflows(workspace, None, CarriedInstructions(("AGENTS.md",))).instructions_for("t1") == ""
    codex_like = Workflows(workspace, None, CarriedInstructions(("AGENTS.md",), always=True))
    assert codex_like.instructions_for("t1") == (
        f'<workspace-instructions file="{workspace.root / "AGENTS.md"}">\nRoot rules.\n</workspace-instructions>\n\n')
    assert codex_like.instructions_for("t1") == ""  # once per thread


def test_a_cli_that_reads_no_claude_md_gets_the_roots_and_the_workflows_once(tmp_path: Path) -> None:
    """claude-agent-acp's: the root's CLAUDE.md files carried, the workflow's CLAUDE.md in its own block alone."""
    workspace, _ = workflow(tmp_path, FILES)
    (workspace.root / "CLAUDE.md").write_text("Root rules.")
    (workspace.root / ".claude").mkdir()
    (workspace.root / ".claude" / "CLAUDE.md").write_text("Root dot rules.")
    carried = CarriedInstructions(("CLAUDE.md", ".claude/CLAUDE.md"), always=True, from_folder=False)
    preamble = Workflows(workspace, WorkflowSpec("https://example.invalid/flows.git"), carried).instructions_for("t1")
    for part in ("Root rules.", "Root dot rules.", "Never force-push.", "Write tests first."):
        assert preamble.count(part) == 1, part
    assert preamble.count("<workspace-instructions") == 2
