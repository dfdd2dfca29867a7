"""What a hostile agent or request could try against the workspace calls: git options smuggled in as a branch,
credentials in URLs, symlinks in a workflow repository or under repos/, surrogates and loops in paths, a token sent
to another host, a task output that points at the runner's own environment. Each is refused with a JSON 4xx and
touches nothing."""

from __future__ import annotations

from git_remote import bare_repo, remotes_in, run_git
from harness import RunnerHarness
from process_bridge import FakeCliBridge

from ambient_runner.workspace.git import GitTokens


async def test_git_options_and_credentials_never_reach_git(tmp_path):
    url = bare_repo(remotes_in(tmp_path), "demo", {"a.txt": "a"})
    marker = tmp_path / "pwned"
    async with RunnerHarness(FakeCliBridge(tmp_path), workspace_path=tmp_path / "workspace") as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        (workspace / "artifacts").mkdir()
        for branch in (f"--upload-pack=touch {marker};git-upload-pack", "-b", "a..b", "x\x00y", "main;id"):
            answer = await client.post("/content/git-configure-remote",
                                       json={"path": "/artifacts", "remoteUrl": url, "branch": branch})
            assert answer.status_code == 400, (branch, answer.text)
            added = await client.post("/repos/add", json={"url": url, "branch": branch, "name": "demo"})
            assert added.status_code == 400, (branch, added.text)
        for bad_url in ("https://ghp_secret@github.com/o/r.git", "https://u:p@github.com/o/r.git",
                        "ext::sh -c touch% /tmp/x", f"--upload-pack=touch {marker}", "file:///x\x00y"):
            answer = await client.post("/repos/add", json={"url": bad_url})
            assert answer.status_code == 400, (bad_url, answer.text)
        assert not marker.exists()
        assert not (workspace / "repos").exists() or not list((workspace / "repos").iterdir())


async def test_symlinks_are_unlinked_never_followed_by_removals(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path), workspace_path=tmp_path / "workspace") as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        (workspace / "repos").mkdir()
        (workspace / "keep.txt").write_text("keep")
        (workspace / "repos" / "x").symlink_to("..")
        removed = await client.post("/repos/remove", json={"name": "x"})
        assert removed.status_code == 200
        assert (workspace / "keep.txt").read_text() == "keep" and not (workspace / "repos" / "x").exists()
        (workspace / "loop").symlink_to(workspace / "loop")
        for call in (client.get("/content/list", params={"path": "/loop"}),
                     client.post("/content/write", json={"path": "/loop/x", "content": "x"}),
                     client.post("/content/write", content=b'{"path": "\\ud800", "content": "x"}')):
            answer = await call
            assert answer.status_code in (400, 422) and answer.json()["code"], answer.text


async def test_a_workflow_folder_reached_through_a_symlink_is_refused(tmp_path):
    secret_dir = tmp_path / "elsewhere"
    secret_dir.mkdir()
    (secret_dir / "secret.txt").write_text("not for the workflow")
    work = remotes_in(tmp_path) / "wf-work"
    work.mkdir(parents=True)
    run_git("init", "--quiet", "--initial-branch=main", cwd=work)
    (work / "escape").symlink_to(secret_dir)
    (work / "README.md").write_text("x")
    (work / "order").mkdir()
    (work / "order" / ".claude" / "commands").mkdir(parents=True)
    (work / "order" / ".claude" / "commands" / "odd.md").write_text("---\norder: --1\n---\n")
    run_git("add", "-A", cwd=work)
    run_git("commit", "--quiet", "-m", "x", cwd=work)
    url = f"file://{work}"
    async with RunnerHarness(FakeCliBridge(tmp_path), workspace_path=tmp_path / "workspace") as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        escaped = await client.post("/workflow", json={"gitUrl": url, "branch": "main", "path": "escape"})
        assert escaped.status_code == 400, escaped.text
        assert (secret_dir / "secret.txt").exists()  # not moved away
        assert not (workspace / "workflows" / "wf-work" / "secret.txt").exists()
        odd = await client.post("/workflow", json={"gitUrl": url, "branch": "main", "path": "order"})
        assert odd.status_code == 200, odd.text
        meta = await client.get("/content/workflow-metadata")
        assert meta.status_code == 200 and meta.json()["commands"][0]["id"] == "odd"


def test_a_token_goes_to_the_calls_own_host_over_https_only():
    tokens = GitTokens(github="ghp_only-for-github", gitlab="glpat-only-for-gitlab")
    assert tokens.for_request("https://github.com/acme/app.git", "github.com") == ("x-access-token",
                                                                                    "ghp_only-for-github")
    assert tokens.for_request("https://gitlab.example/acme/app.git", "gitlab.example") == ("oauth2",
                                                                                           "glpat-only-for-gitlab")
    assert tokens.for_request("https://evil.example/x.git", "github.com") is None  # e.g. a redirect elsewhere
    assert tokens.for_request("http://github.com/acme/app.git", "github.com") is None
    assert GitTokens(gitlab="glpat-x").for_request("https://github.com/a.git", "github.com") is None


async def test_a_task_output_that_leads_elsewhere_is_not_read(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path), agui_token="the-session-token-value") as runner:
        client = runner.client
        client.headers["X-Ambient-Session-Token"] = "the-session-token-value"
        tasks = runner.app.runtime.runs.host.tasks
        task_dir = tmp_path / "claude-tmp" / "tasks"
        task_dir.mkdir(parents=True)
        (task_dir / "t1.output").symlink_to("/proc/self/environ")
        tasks.started("th", "t1", "sneaky", "local_bash")
        tasks.completed("t1", "completed", "done", output_file=str(task_dir / "t1.output"))
        refused = await client.get("/tasks/t1/output")
        assert refused.status_code == 404 and "the-session-token-value" not in refused.text
        (task_dir / "t2.output").write_text("token: the-session-token-value\n")
        tasks.started("th", "t2", "honest", "local_bash")
        tasks.completed("t2", "completed", "done", output_file=str(task_dir / "t2.output"))
        read = await client.get("/tasks/t2/output")
        assert read.status_code == 200 and "the-session-token-value" not in read.text
        assert read.json()["output"] == [{"type": "text", "text": "token: [REDACTED]"}]
