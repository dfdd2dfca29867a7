"""A Claude session resumed in another folder (a workflow switch): its newest transcript is put where Claude Code
looks for the sessions of that folder (``projects/<key>``), never over a newer one, never through a link."""

from __future__ import annotations

import os
from pathlib import Path

from ambient_runner.bridges.claude.config import carry_session, project_key


def test_the_newest_transcript_is_carried_into_the_new_folders_project(tmp_path: Path) -> None:
    assert project_key(Path("/workspace/workflows/team-flows")) == "-workspace-workflows-team-flows"
    projects = tmp_path / "projects"
    old, older = projects / "-workspace-workflows-a", projects / "-workspace"
    for folder, text, when in ((older, "older", 1_000), (old, "newest", 2_000)):
        folder.mkdir(parents=True)
        (folder / "s1.jsonl").write_text(text)
        os.utime(folder / "s1.jsonl", (when, when))
    carry_session(tmp_path, "s1", Path("/workspace/workflows/b"))
    assert (projects / "-workspace-workflows-b" / "s1.jsonl").read_text() == "newest"
    carry_session(tmp_path, "s1", Path("/workspace/workflows/a"))  # already the newest there: untouched
    assert (old / "s1.jsonl").read_text() == "newest"


def test_nothing_is_carried_for_an_unknown_session_or_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text("not a transcript of ours")
    (tmp_path / "projects" / "-elsewhere").mkdir(parents=True)
    os.symlink(outside, tmp_path / "projects" / "-elsewhere" / "s2.jsonl")
    carry_session(tmp_path, "s2", Path("/workspace"))
    carry_session(tmp_path, "s3", Path("/workspace"))
    assert sorted(p.name for p in (tmp_path / "projects").iterdir()) == ["-elsewhere"]
