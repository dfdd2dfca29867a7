"""Hostile paths, through the platform's content calls on the real service: every one refused with a JSON 400 (or a
404 for what is simply not there), and nothing outside the workspace read, written or deleted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness import RunnerHarness
from process_bridge import FakeCliBridge

from ambient_runner.workspace.paths import PathRefused, Workspace

HOSTILE = [
    "../outside.txt", "/../outside.txt", "a/../../outside.txt", "..", "../", "./../outside.txt",
    "....//..//outside.txt/..", "a/b/../../../outside.txt", "..\\outside.txt", "a\\..\\..\\outside.txt",
    "to-outside/secret.txt", "to-outside", "dir-link/secret.txt", "to-etc/passwd", "to-state/session.json",
    "file\x00.txt", "new\nline.txt", "tab\there", ".gemini/settings.json", "/.gemini", "x" * 5000,
    "/../../../../../../etc/passwd",
]


@pytest.fixture
def layout(tmp_path):
    workspace = tmp_path / "workspace"
    outside = tmp_path / "outside"
    state = tmp_path / "state" / ".gemini"
    for folder in (workspace, outside, state):
        folder.mkdir(parents=True)
    (outside / "secret.txt").write_text("outside the workspace")
    (state / "session.json").write_text("{}")
    (workspace / "to-outside").symlink_to(outside / "secret.txt")
    (workspace / "dir-link").symlink_to(outside)
    (workspace / "to-etc").symlink_to("/etc")
    (workspace / "to-state").symlink_to(state)
    (workspace / "inside.txt").write_text("inside")
    (workspace / "ok-link").symlink_to(workspace / "inside.txt")
    return workspace, outside, state


def tree(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime) for p in root.rglob("*")}


def test_the_resolver_refuses_each_hostile_path(layout):
    workspace, _, state = layout
    ws = Workspace.of(workspace, state)
    for raw in HOSTILE:
        with pytest.raises(PathRefused):
            ws.resolve(raw)
    assert ws.resolve("/inside.txt") == workspace / "inside.txt"
    assert ws.resolve("ok-link") == workspace / "inside.txt"  # a link that stays inside is fine
    assert ws.resolve("/") == workspace and ws.relative(workspace / "a" / "b") == "/a/b"


async def test_hostile_paths_over_http_touch_nothing_outside(layout, tmp_path):
    workspace, outside, state = layout
    before = {**tree(outside), **tree(state.parent), **tree(Path("/etc")), "root": sorted(os.listdir(tmp_path))}
    async with RunnerHarness(FakeCliBridge(tmp_path), workspace_path=workspace,
                             runner_state_root=state.parent) as runner:
        client = runner.client
        for raw in HOSTILE:
            calls = [client.get("/content/list", params={"path": raw}),
                     client.get("/content/file", params={"path": raw}),
                     client.post("/content/write", json={"path": raw, "content": "pwned"}),
                     client.request("DELETE", "/content/delete", json={"path": raw}),
                     client.get("/content/git-status", params={"path": raw})]
            for call in calls:
                answer = await call
                assert answer.status_code in (400, 404, 422), (raw, answer.status_code, answer.text)
                assert answer.json()["code"] in ("INVALID_PATH", "PATH_REFUSED", "NOT_FOUND", "INVALID_REQUEST")
        listed = (await client.get("/content/list", params={"path": "/"})).json()["items"]
    after = {**tree(outside), **tree(state.parent), **tree(Path("/etc")), "root": sorted(os.listdir(tmp_path))}
    assert after == before
    assert (outside / "secret.txt").read_text() == "outside the workspace"
    names = {item["name"] for item in listed}
    assert "inside.txt" in names and "ok-link" in names
    assert not names & {"to-outside", "dir-link", "to-etc", "to-state"}  # links out are not even listed
