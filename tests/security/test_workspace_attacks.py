"""The workspace endpoints against an agent (or a repository it cloned) that prepared the workspace first: a planted
git command never runs, a link out is never followed, a folder swapped for a link mid-call touches nothing outside,
no URL credential is echoed, and malformed values are a 4xx that changes nothing.

Real git (to plant and to prove a plant is live), real files, bare remotes inside the workspace (file://)."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from git_remote import AUTHOR, bare_repo, remotes_in, run_git
from harness import RunnerHarness
from media import url_part
from process_bridge import FakeCliBridge, script

from ambient_runner.stream.encoding import redact_url
from ambient_runner.workspace import files
from ambient_runner.workspace.paths import PathRefused, Workspace

PLANTED = ("clean", "smudge", "process", "textconv", "fsmonitor", "ssh", "uploadpack", "receivepack", "pager",
           "editor", "hook", "askpass", "helper")


def harness(tmp_path: Path, **settings: object) -> RunnerHarness:
    return RunnerHarness(FakeCliBridge(tmp_path), workspace_path=tmp_path / "workspace",
                         runner_state_root=tmp_path / "state", **settings)


def tree(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry under ``root`` with its size, mtime and (for a file) its bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        found[str(path)] = (info.st_size, info.st_mtime_ns, data)
    return found


def plant(repo: Path, marker: Path, remote_url: str) -> str:
    """A ``.git/config`` that makes real git run a command for each feature a repository can configure."""
    def touch(name: str) -> str:
        return f"sh -c 'touch {marker}.{name}'"
    return f"""[core]
\trepositoryformatversion = 0
\tbare = false
\tfsmonitor = {touch("fsmonitor")}
\tsshCommand = {touch("ssh")}
\thooksPath = {repo}/.git/planted-hooks
\tpager = {touch("pager")}
\teditor = {touch("editor")}
\taskPass = {touch("askpass")}
[filter "x"]
\tclean = {touch("clean")}
\tsmudge = {touch("smudge")}
\tprocess = {touch("process")}
[diff "x"]
\ttextconv = {touch("textconv")}
[credential]
\thelper = {touch("helper")}
[remote "origin"]
\turl = {remote_url}
\tfetch = +refs/heads/*:refs/remotes/origin/*
\tuploadpack = {touch("uploadpack")}
\treceivepack = {touch("receivepack")}
[branch "main"]
\tremote = origin
\tmerge = refs/heads/main
"""


def fired(marker: Path) -> list[str]:
    return [name for name in PLANTED if Path(f"{marker}.{name}").exists()]


async def test_a_planted_git_command_never_runs_on_any_endpoint(tmp_path):
    marker = tmp_path / "marker"
    remote = bare_repo(remotes_in(tmp_path), "cfg", {"a.txt": "a\n", ".gitattributes": "* filter=x diff=x\n"})
    async with harness(tmp_path) as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        added = await client.post("/repos/add", json={"url": remote, "branch": "main", "name": "cfg"})
        assert added.status_code == 200, added.text
        repo = workspace / "repos" / "cfg"
        hooks = repo / ".git" / "planted-hooks"
        for hook in ("post-checkout", "pre-commit", "post-merge", "reference-transaction", "fsmonitor-watchman"):
            written = await client.post("/content/write", json={
                "path": f"/repos/cfg/.git/planted-hooks/{hook}", "content": f"#!/bin/sh\ntouch {marker}.hook\n"})
            assert written.status_code == 200, written.text
            (hooks / hook).chmod(0o755)
        planted = await client.post("/content/write", json={"path": "/repos/cfg/.git/config",
                                                             "content": plant(repo, marker, remote)})
        assert planted.status_code == 200, planted.text
        await client.post("/content/write", json={"path": "/repos/cfg/a.txt", "content": "a\nchanged\n"})

        status = await client.get("/content/git-status", params={"path": "/repos/cfg"})
        assert status.status_code == 200, status.text
        assert status.json()["initialized"] and status.json()["hasChanges"] and status.json()["totalAdded"] == 1
        branches = await client.get("/content/git-list-branches", params={"path": "/repos/cfg"})
        assert branches.status_code == 200 and branches.json() == {"branches": ["main"]}, branches.text
        configured = await client.post("/content/git-configure-remote", json={
            "path": "/repos/cfg", "remoteUrl": remote, "branch": "main"}, headers={"X-GitHub-Token": "ghp_" + "x" * 36})
        assert configured.status_code == 200 and configured.json()["fetched"] is True, configured.text
        listed = await client.get("/repos/status")
        assert listed.status_code == 200 and [r["name"] for r in listed.json()["repos"]] == ["cfg"], listed.text
        again = await client.post("/repos/add", json={"url": remote, "name": "cfg"})
        assert again.status_code == 200 and again.json()["newly_cloned"] is False, again.text
        workflow = await client.post("/workflow", json={"gitUrl": remote, "branch": "main"})
        assert workflow.status_code == 200, workflow.text
        assert (await client.get("/content/workflow-metadata")).status_code == 200
        assert fired(marker) == []

    # The plant is live: real git, as the endpoints ran it before, runs the repository's commands.
    done = subprocess.run(["git", "status", "--porcelain"], cwd=repo, env={**AUTHOR, "GIT_TERMINAL_PROMPT": "0"},
                          capture_output=True, text=True, timeout=60, check=False)
    assert "fsmonitor" in fired(marker) and {"clean", "process"} & set(fired(marker)), (fired(marker), done.stderr)


@pytest.fixture
def outside_repo(tmp_path: Path) -> Path:
    outside = tmp_path / "outside-repo"
    outside.mkdir()
    run_git("init", "--quiet", "--initial-branch=secret-branch", cwd=outside)
    (outside / "secret.txt").write_text("outside")
    run_git("add", "-A", cwd=outside)
    run_git("commit", "--quiet", "-m", "outside", cwd=outside)
    run_git("remote", "add", "origin", "https://outside.example/private.git", cwd=outside)
    return outside


async def test_git_links_out_of_the_workspace_are_refused_and_touch_nothing(tmp_path, outside_repo):
    remote = bare_repo(remotes_in(tmp_path), "r", {"a.txt": "a"})
    before = tree(outside_repo)
    async with harness(tmp_path) as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        state_dir = runner.settings.state_dir
        (workspace / "linked").mkdir()
        (workspace / "linked" / ".git").symlink_to(outside_repo / ".git")
        (workspace / "gitfile").mkdir()
        (workspace / "gitfile" / ".git").write_text(f"gitdir: {outside_repo / '.git'}\n")
        (workspace / "relative").mkdir()
        (workspace / "relative" / ".git").write_text("gitdir: ../../outside-repo/.git\n")
        state_dir.mkdir(parents=True, exist_ok=True)
        run_git("init", "--quiet", "--bare", str(state_dir / "hidden.git"), cwd=tmp_path)
        (workspace / "statefile").mkdir()
        (workspace / "statefile" / ".git").write_text(f"gitdir: {state_dir / 'hidden.git'}\n")
        (workspace / "worktree").mkdir()
        run_git("init", "--quiet", cwd=workspace / "worktree")
        run_git("config", "core.worktree", str(outside_repo), cwd=workspace / "worktree")
        (workspace / "included").mkdir()
        run_git("init", "--quiet", cwd=workspace / "included")
        run_git("config", "include.path", str(outside_repo / ".git" / "config"), cwd=workspace / "included")
        (workspace / "alternates").mkdir()
        run_git("init", "--quiet", cwd=workspace / "alternates")
        (workspace / "alternates" / ".git" / "objects" / "info" / "alternates").write_text(
            f"{outside_repo / '.git' / 'objects'}\n")

        for folder in ("linked", "gitfile", "relative", "statefile", "worktree", "included", "alternates"):
            for call in (client.get("/content/git-status", params={"path": f"/{folder}"}),
                         client.get("/content/git-list-branches", params={"path": f"/{folder}"}),
                         client.post("/content/git-configure-remote",
                                     json={"path": f"/{folder}", "remoteUrl": remote, "branch": "main"})):
                answer = await call
                assert answer.status_code == 400 and answer.json()["code"] == "PATH_REFUSED", (folder, answer.text)
                assert f"/{folder}/.git" in answer.json()["error"], answer.text
                assert "secret-branch" not in answer.text and "outside.example" not in answer.text

        # A .git file inside the workspace (a submodule's, or --separate-git-dir) keeps working.
        (workspace / "modules").mkdir()
        run_git("init", "--quiet", f"--separate-git-dir={workspace / 'modules' / 'sub.git'}",
                str(workspace / "sub"), cwd=workspace)
        inside = await client.get("/content/git-status", params={"path": "/sub"})
        assert inside.status_code == 200 and inside.json()["initialized"] is True, inside.text
    assert tree(outside_repo) == before
    assert not (outside_repo / ".git" / "FETCH_HEAD").exists()


async def test_top_folders_that_are_links_out_are_refused(tmp_path, outside_repo):
    remote = bare_repo(remotes_in(tmp_path), "flow", {".ambient/ambient.json": '{"name": "flow"}'})
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "flow").mkdir(parents=True)
    (elsewhere / "flow" / "keep.txt").write_text("keep")
    (elsewhere / "project").symlink_to(outside_repo)
    before = {**tree(elsewhere), **tree(outside_repo)}
    async with harness(tmp_path) as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        (workspace / "repos").symlink_to(elsewhere)
        (workspace / "workflows").symlink_to(elsewhere)
        for call in (client.get("/repos/status"),
                     client.post("/repos/add", json={"url": remote, "name": "flow"}),
                     client.post("/repos/remove", json={"name": "flow"}),
                     client.post("/workflow", json={"gitUrl": remote, "branch": "main"})):
            answer = await call
            assert answer.status_code == 400 and answer.json()["code"] == "PATH_REFUSED", answer.text
            assert "symbolic link" in answer.json()["error"], answer.text
    assert {**tree(elsewhere), **tree(outside_repo)} == before


async def test_workflow_files_that_lead_out_are_not_read(tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text('---\ndescription: the outside secret\n---\n{"name": "the outside secret"}\n')
    remote = bare_repo(remotes_in(tmp_path), "flow", {".ambient/ambient.json": '{"name": "flow"}',
                                                      ".claude/commands/go.md": "---\ndescription: go\n---\n"})
    async with harness(tmp_path) as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        selected = await client.post("/workflow", json={"gitUrl": remote, "branch": "main"})
        assert selected.status_code == 200, selected.text
        folder = workspace / "workflows" / "flow"
        good = (await client.get("/content/workflow-metadata")).json()
        assert good["config"]["name"] == "flow" and [c["id"] for c in good["commands"]] == ["go"]
        for link in (folder / ".ambient" / "ambient.json", folder / ".claude" / "commands" / "leak.md",
                     folder / ".claude" / "agents"):
            original = folder / "original"
            if link.exists():
                link.rename(original)
            link.symlink_to(secret if link.name != "agents" else tmp_path)
            answer = await client.get("/content/workflow-metadata")
            assert answer.status_code == 400 and answer.json()["code"] == "PATH_REFUSED", (link, answer.text)
            assert "outside secret" not in answer.text
            link.unlink()
            if original.exists():
                original.rename(link)
        assert (await client.get("/content/workflow-metadata")).json() == good


async def test_file_urls_reach_only_the_workspace_never_the_runners_own_folders(tmp_path):
    async with harness(tmp_path) as runner:
        client, workspace, settings = runner.client, runner.settings.workspace_path, runner.settings
        targets = [settings.state_dir, settings.runner_attachments_dir, workspace / settings.state_dir.name,
                   tmp_path / "state", Path("/etc")]
        for target in targets:
            target.mkdir(parents=True, exist_ok=True) if str(target).startswith(str(tmp_path)) else None
            for call in (client.post("/repos/add", json={"url": f"file://{target}", "name": "copy"}),
                         client.post("/workflow", json={"gitUrl": f"file://{target}", "branch": "main"})):
                answer = await call
                assert answer.status_code == 400, (target, answer.text)
        for url in ("ssh://git@github.com/o/r.git", "git://github.com/o/r.git", "git@github.com:o/r.git",
                    "ext::sh -c touch% /tmp/x", "fd::3", "file://elsewhere/x.git"):
            answer = await client.post("/repos/add", json={"url": url})
            assert answer.status_code == 400, (url, answer.text)
        assert not (workspace / "repos").exists() or list((workspace / "repos").iterdir()) == []


def _exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (``renameat2(RENAME_EXCHANGE)``): one is always a folder, the other a link."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


@contextlib.contextmanager
def exchanging(a: Path, b: Path) -> Iterator[list[int]]:
    """``a`` and ``b`` exchanged in a tight loop on a thread (bounded: 200,000 swaps), until the block ends; yields
    the swap count."""
    done, swaps = threading.Event(), [0]

    def swapper() -> None:
        while not done.is_set() and swaps[0] < 200_000:
            _exchange(a, b)
            swaps[0] += 1

    thread = threading.Thread(target=swapper)
    thread.start()
    try:
        yield swaps
    finally:
        done.set()
        thread.join()


def test_a_folder_swapped_for_a_link_mid_call_never_leads_outside(tmp_path):
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    (workspace / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.txt").write_text("outside, never to be written or deleted")
    (workspace / "swap").symlink_to(outside)
    before = tree(outside)
    ws = Workspace.of(workspace, tmp_path / "state" / ".gemini")
    outcomes = {"written": 0, "deleted": 0, "refused": 0}
    with exchanging(workspace / "d", workspace / "swap") as swaps:
        for i in range(3000):
            with contextlib.suppress(files.NotFound):
                try:
                    if i % 2:
                        files.delete_file(ws, "d/f.txt")
                        outcomes["deleted"] += 1
                    else:
                        files.write_file(ws, "d/f.txt", f"inside {i}".encode())
                        outcomes["written"] += 1
                except PathRefused:
                    outcomes["refused"] += 1
    assert tree(outside) == before, sorted(set(tree(outside)) ^ set(before))
    assert swaps[0] > 1000 and min(outcomes.values()) > 0, (swaps, outcomes)  # both sides of the race were hit


async def test_url_credentials_never_come_back(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    secrets = ("pa/ss-w0rd", "p@ss-w0rd", "p%2Fss-w0rd", "S3cretPass")
    urls = [f"https://user:{secrets[0]}@host.invalid/x.git", f"https://u:{secrets[1]}@host.invalid/x.git",
            f"https://u:{secrets[2]}@host.invalid/x.git", f"https://{secrets[0]}@host.invalid/x.git"]
    async with harness(tmp_path) as runner:
        client = runner.client
        for url in urls:
            for call in (client.post("/repos/add", json={"url": url}),
                         client.post("/workflow", json={"gitUrl": url, "branch": "main"}),
                         client.post("/content/git-configure-remote", json={"path": "/", "remoteUrl": url})):
                answer = await call
                assert 400 <= answer.status_code < 500, answer.text
                assert not any(secret in answer.text for secret in secrets), answer.text
        for secret in (secrets[0], secrets[3]):
            part = url_part("image", f"file://user:{secret}@localhost/pic.png", "image/png")
            attached = await client.post("/run", json=runner.run_body("t", [{"type": "text", "text": "see"}, part]))
            assert attached.status_code == 422 and attached.json()["code"] == "INVALID_ATTACHMENT", attached.text
            assert not any(secret in attached.text for secret in secrets), attached.text
    assert not any(secret in caplog.text for secret in secrets)
    for url, secret in zip(urls, (*secrets[:3], secrets[0]), strict=True):
        said = redact_url(f"fatal: unable to access '{url}': could not resolve host")
        assert secret not in said and "host.invalid/x.git" in said, said


BAD_MODELS = ["\u0000", "a b", "\u202egemini", "../../v1beta/x", "m:streamGenerateContent?alt=sse#x", "x" * 201,
              "gemini/../x", "-flag", "tab\tname", "名前"]


async def test_values_that_are_not_model_names_change_nothing(tmp_path):
    async with harness(tmp_path) as runner:
        client = runner.client
        first = await client.post("/model", json={"model": "gemini-2.5-flash"})
        assert first.status_code == 200, first.text
        for model in BAD_MODELS:
            refused = await client.post("/model", json={"model": model})
            assert refused.status_code == 422 and refused.json()["code"] == "INVALID_OPTION", (model, refused.text)
            run = await client.post("/run", json=runner.run_body("t", "hi", {"model": model}))
            assert run.status_code == 422 and run.json()["code"] == "INVALID_OPTION", (model, run.text)
        surrogate = await client.post("/model", content=b'{"model": "\\ud800"}',
                                      headers={"content-type": "application/json"})
        assert surrogate.status_code == 422 and surrogate.json()["code"] == "INVALID_JSON", surrogate.text
        kept = await client.post("/model", json={"model": "vertex/claude-sonnet-4@20250514"})
        assert kept.status_code == 200 and kept.json()["previousModel"] == "gemini-2.5-flash", kept.text
        events = await runner.run("t", script())
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]


MALFORMED = [b'{"comment": "\\ud800", "metaType": "thumbs_up"}', b'{"messageId": "\\udfff"}',
             b'{"a": NaN}', b'{"a": -Infinity}', b"[" * 400 + b"]" * 400,
             b'{"payload": ' + b'{"a": ' * 400 + b"1" + b"}" * 400 + b"}"]


async def test_every_post_answers_a_malformed_body_with_a_4xx(tmp_path):
    async with harness(tmp_path) as runner:
        client = runner.client
        document = (await client.get("/openapi.json")).json()
        calls = [(method.upper(), path) for path, methods in document["paths"].items() for method in methods
                 if method in ("post", "put", "delete", "patch") and "{" not in path]
        assert ("POST", "/feedback") in calls and ("POST", "/run") in calls and len(calls) >= 10
        for method, path in calls:
            for body in MALFORMED:
                answer = await client.request(method, path, content=body, headers={"content-type": "application/json"})
                assert 400 <= answer.status_code < 500, (method, path, body[:40], answer.status_code, answer.text)
                assert answer.json()["code"], answer.text


# ----- found in review: links and FIFOs inside .git, '?' in file:// paths, includes, alternates, races ----------
def clone_into_workspace(tmp_path: Path, workspace: Path, name: str) -> Path:
    remote = bare_repo(remotes_in(tmp_path), f"{name}-src", {"a.txt": "a\n"})
    run_git("clone", "--quiet", remote, str(workspace / name), cwd=tmp_path)
    return workspace / name


async def test_links_and_fifos_inside_a_git_dir_are_refused_and_touch_nothing(tmp_path, outside_repo):
    victim = tmp_path / "victim.txt"
    victim.write_text("never overwritten")
    before = {**tree(outside_repo), "victim": victim.read_bytes()}
    async with harness(tmp_path) as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        remote = bare_repo(remotes_in(tmp_path), "upstream", {"b.txt": "b\n"})
        plants = {"fetchhead": lambda git: (git / "FETCH_HEAD").symlink_to(victim),
                  "refs": lambda git: (shutil.rmtree(git / "refs" / "remotes"),
                                       (git / "refs" / "remotes").symlink_to(outside_repo / ".git" / "refs")),
                  "objects": lambda git: (shutil.rmtree(git / "objects"),
                                          (git / "objects").symlink_to(outside_repo / ".git" / "objects")),
                  "fifo": lambda git: ((git / "config").unlink(), os.mkfifo(git / "config")),
                  "headerinclude": lambda git: (git / "config").write_text(
                      f"[include] path = {outside_repo / '.git' / 'config'}\n"),
                  "alternates": lambda git: (git / "objects" / "info" / "alternates").write_text(
                      f"{workspace / 'inner' / 'objects'}\n")}
        for name, plant in plants.items():
            repo = clone_into_workspace(tmp_path, workspace, name)
            plant(repo / ".git")
            for call in (client.get("/content/git-status", params={"path": f"/{name}"}),
                         client.get("/content/git-list-branches", params={"path": f"/{name}"}),
                         client.post("/content/git-configure-remote", json={"path": f"/{name}", "remoteUrl": remote})):
                answer = await call
                assert answer.status_code == 400 and answer.json()["code"] == "PATH_REFUSED", (name, answer.text)
                assert "secret-branch" not in answer.text
        (workspace / "repos").mkdir()
        os.mkfifo(workspace / "repos" / "pipe")
        fifo_repo = clone_into_workspace(tmp_path, workspace / "repos", "r")
        (fifo_repo / ".git" / "index").unlink()
        os.mkfifo(fifo_repo / ".git" / "index")
        listed = await client.get("/repos/status")
        assert listed.status_code == 200 and listed.json() == {"repos": []}, listed.text
        pipe = await client.get("/content/file", params={"path": "/repos/pipe"})
        assert pipe.status_code == 404, pipe.text
        assert (await client.get("/health")).status_code == 200
    assert {**tree(outside_repo), "victim": victim.read_bytes()} == before


async def test_the_git_worker_is_confined_to_the_folders_it_was_given(tmp_path, outside_repo):
    """Landlock, below the checks: a link planted after them (here: never checked) still leads nowhere."""
    from ambient_runner.process.landlock import abi_version
    from ambient_runner.workspace.git import GitError, run_worker
    from ambient_runner.workspace.paths import LinkRefused

    if abi_version() < 1:
        pytest.fail("this kernel has no Landlock; the worker's confinement cannot be shown")
    victim = tmp_path / "victim.txt"
    victim.write_text("never overwritten")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    ws = Workspace.of(workspace, tmp_path / "state" / ".gemini")
    repo = clone_into_workspace(tmp_path, workspace, "late")
    remote = bare_repo(remotes_in(tmp_path), "up", {"c.txt": "c\n"})
    (repo / ".git" / "FETCH_HEAD").symlink_to(victim)  # libgit2 writes through it (its file buffer follows links)
    fetched = await run_worker("configure", {"folder": str(repo), "shown": "/late", "exists": True, "url": remote,
                                             "branch": "main"}, ws, writable=[repo, repo / ".git"],
                             readable=(Path(remote.removeprefix("file://")),))
    assert fetched is False and victim.read_text() == "never overwritten"
    (repo / ".git" / "FETCH_HEAD").unlink()
    shutil.rmtree(repo / ".git" / "objects")
    (repo / ".git" / "objects").symlink_to(outside_repo / ".git" / "objects")
    with pytest.raises((LinkRefused, GitError)):
        await run_worker("status", {"folder": str(repo), "shown": "/late"}, ws, writable=[repo, repo / ".git"])
    os.mkfifo(repo / ".git" / "hang")
    (repo / ".git" / "config").unlink()
    (repo / ".git" / "config").symlink_to(repo / ".git" / "hang")
    with pytest.raises(GitError, match="did not finish"):  # a FIFO hangs the worker, never the runner
        await run_worker("status", {"folder": str(repo), "shown": "/late"}, ws, writable=[repo, repo / ".git"],
                         bound=1)


async def test_file_urls_are_plain_paths_to_checked_repositories(tmp_path, outside_repo):
    async with harness(tmp_path) as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        state = runner.settings.state_dir
        run_git("init", "--quiet", "--bare", str(state / "secret.git"), cwd=tmp_path)
        for odd in ("d?", "e#", "f%"):
            (workspace / odd).mkdir()
        (workspace / "lnk").mkdir()
        (workspace / "lnk" / ".git").symlink_to(outside_repo / ".git")
        (workspace / "gf").mkdir()
        (workspace / "gf" / ".git").write_text(f"gitdir: {outside_repo / '.git'}\n")
        for url in (f"file://{workspace}/d?/../../state/.gemini/secret.git", f"file://{workspace}/e#/../x",
                    f"file://{workspace}/f%2F..%2Fx", f"file://{workspace}/lnk", f"file://{workspace}/gf"):
            answer = await client.post("/repos/add", json={"url": url, "name": "copy"})
            assert answer.status_code == 400, (url, answer.text)
        assert not (workspace / "repos" / "copy").exists()


def test_removals_and_workflow_installs_through_a_swapped_folder_touch_nothing_outside(tmp_path):
    from ambient_runner.workspace.repos import remove_in

    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    (workspace / "repos").mkdir(parents=True)
    count = 400
    for i in range(count):
        (workspace / "repos" / f"x{i}").mkdir()
        (outside / f"x{i}").mkdir(parents=True)
        (outside / f"x{i}" / "precious").write_text("keep")
    (workspace / "swap").symlink_to(outside)
    ws = Workspace.of(workspace, tmp_path / "state" / ".gemini")
    refused = 0
    with exchanging(workspace / "repos", workspace / "swap") as swaps:
        for i in range(count):
            try:
                remove_in(ws, "repos", f"x{i}")
            except PathRefused:
                refused += 1
    assert all((outside / f"x{i}" / "precious").read_text() == "keep" for i in range(count))
    assert swaps[0] > 100 and 0 < refused < count, (swaps, refused)


def test_a_remote_url_is_shown_without_its_credentials_whatever_they_hold():
    from ambient_runner.stream.encoding import redact_url_value

    for url in ("https://user:to'ken SECRET@github.com/x", 'https://u:p"<>@github.com/x', "https://u:pa/ss@h/x",
                "https://u:p@ss@h/x", "https://tok@h/x"):
        shown = redact_url_value(url)
        assert shown.startswith("https://[redacted]@") and not any(
            s in shown for s in ("SECRET", "token", "to'ken", 'p"<>', "pa/ss", "p@ss", "tok@")), shown
    assert redact_url_value("https://github.com/acme/app.git") == "https://github.com/acme/app.git"


def test_url_passwords_are_redacted_in_every_event_and_log_line():
    """The stream's and the log's redactor: a URL's password goes whatever it holds; a URL without one stays."""
    from ambient_runner.stream.encoding import Redactor

    redact = Redactor([])
    for text, secret in (("fatal: unable to access 'https://user:pa/ss-w0rd@host.invalid/x.git'", "pa/ss-w0rd"),
                         ("GET http://u:S3cretPass@proxy.local:3128/", "S3cretPass"),
                         ('{"url": "https://x-access-token:abc%2Fdef@github.com/o/r"}', "abc%2Fdef")):
        assert secret not in redact(text) and "[REDACTED]@" in redact(text), redact(text)
    for kept in ("see https://github.com/acme/app and ssh://git@github.com/acme/app", "risk-free, sk-learn"):
        assert redact(kept) == kept
