"""Repositories and git through the platform's calls, against bare repositories in the workspace (file://): clone
(/repos/add), status, branches, remove, configure a remote with a token that is used once and never stored, git's
own message on failure."""

from __future__ import annotations

from git_remote import bare_repo, remotes_in, run_git
from harness import RunnerHarness
from process_bridge import FakeCliBridge

TOKEN = "ghp_a-token-that-must-never-be-stored"


async def test_repositories_and_git_status(tmp_path):
    remotes = remotes_in(tmp_path)
    url = bare_repo(remotes, "demo", {"README.md": "demo\n", "src/app.py": "print(1)\n"}, branches=("feature-x",))
    other = bare_repo(remotes, "other", {"x.txt": "x"})
    async with RunnerHarness(FakeCliBridge(tmp_path), workspace_path=tmp_path / "workspace") as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        added = await client.post("/repos/add", json={"url": url, "branch": "main", "name": "demo"},
                                  headers={"X-GitHub-Token": TOKEN})
        assert added.status_code == 200, added.text
        assert added.json() == {"message": "cloned", "name": "demo", "path": "/repos/demo", "newly_cloned": True}
        assert (workspace / "repos" / "demo" / "src" / "app.py").read_text() == "print(1)\n"
        again = await client.post("/repos/add", json={"url": url, "name": "demo"})
        assert again.status_code == 200 and again.json()["newly_cloned"] is False
        clash = await client.post("/repos/add", json={"url": other, "name": "demo"})
        assert clash.status_code == 409 and clash.json()["code"] == "REPO_EXISTS"
        unnamed = await client.post("/repos/add", json={"url": other})
        assert unnamed.json()["name"] == "other"

        status = (await client.get("/repos/status")).json()["repos"]
        assert [(r["name"], r["url"], r["currentActiveBranch"]) for r in status] == [
            ("demo", url, "main"), ("other", other, "main")]
        assert status[0]["defaultBranch"] == "main" and "main" in status[0]["branches"]

        clean = (await client.get("/content/git-status", params={"path": "/repos/demo"})).json()
        assert clean == {"initialized": True, "hasChanges": False, "branch": "main", "remoteUrl": url,
                         "hasRemote": True, "filesAdded": 0, "filesRemoved": 0, "uncommittedFiles": 0,
                         "totalAdded": 0, "totalRemoved": 0}
        await client.post("/content/write", json={"path": "/repos/demo/new.txt", "content": "new\n"})
        await client.post("/content/write", json={"path": "/repos/demo/README.md", "content": "demo\nmore\nlines\n"})
        await client.request("DELETE", "/content/delete", json={"path": "/repos/demo/src/app.py"})
        changed = (await client.get("/content/git-status", params={"path": "/repos/demo"})).json()
        assert changed["hasChanges"] and changed["uncommittedFiles"] == 3
        assert (changed["filesAdded"], changed["filesRemoved"]) == (1, 1)
        assert (changed["totalAdded"], changed["totalRemoved"]) == (2, 1)
        plain = (await client.get("/content/git-status", params={"path": "/"})).json()
        assert plain == {"initialized": False, "hasChanges": False}

        branches = await client.get("/content/git-list-branches", params={"path": "/repos/demo"})
        assert branches.json() == {"branches": ["main"]}  # a single-branch clone knows its own branch only

        removed = await client.post("/repos/remove", json={"name": "other"})
        assert removed.status_code == 200 and not (workspace / "repos" / "other").exists()
        gone = await client.post("/repos/remove", json={"name": "other"})
        assert gone.status_code == 404
        for body in [{"name": "../x"}, {"name": "a/b"}]:
            assert (await client.post("/repos/remove", json=body)).status_code == 400
        assert (workspace / "repos" / "demo").is_dir()


async def test_configure_remote_uses_the_token_once_and_never_stores_it(tmp_path):
    remotes = remotes_in(tmp_path)
    url = bare_repo(remotes, "artifacts", {"a.txt": "a"}, branches=("release",))
    async with RunnerHarness(FakeCliBridge(tmp_path), workspace_path=tmp_path / "workspace") as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        (workspace / "artifacts").mkdir()
        (workspace / "artifacts" / "report.md").write_text("# report\n")
        configured = await client.post("/content/git-configure-remote",
                                       json={"path": "/artifacts", "remoteUrl": url, "branch": "main"},
                                       headers={"X-GitHub-Token": TOKEN, "X-GitLab-Token": "glpat-other-token"})
        assert configured.status_code == 200, configured.text
        assert configured.json() == {"message": "remote configured", "remote": url, "branch": "main", "fetched": True}
        branches = (await client.get("/content/git-list-branches", params={"path": "/artifacts"})).json()
        assert branches == {"branches": ["main"]}
        run_git("fetch", "--quiet", "origin", "release", cwd=workspace / "artifacts")
        assert (await client.get("/content/git-list-branches")).json() == {"branches": ["main", "release"]}
        stored = "".join(p.read_text(errors="replace") for p in (workspace / "artifacts" / ".git").rglob("*")
                         if p.is_file() and p.stat().st_size < 1_000_000)
        assert TOKEN not in stored and "glpat-other-token" not in stored

        with_credentials = await client.post("/content/git-configure-remote", json={
            "path": "/artifacts", "remoteUrl": "https://user:pass@example.invalid/x.git"})
        assert with_credentials.status_code == 400
        missing = await client.post("/repos/add", json={"url": f"file://{remotes}/nothing-here.git"},
                                    headers={"X-GitHub-Token": TOKEN})
        assert missing.status_code == 502 and missing.json()["code"] == "GIT_FAILED"
        message = missing.json()["error"]
        assert "nothing-here.git" in message and TOKEN not in message  # git's own words
        assert not (workspace / "repos" / "nothing-here").exists()
        assert not list((workspace / "repos").glob(".*clone-tmp"))
        for body in [{}, {"url": "--upload-pack=touch /tmp/x"}, {"url": "ext::sh -c touch% /tmp/x"}]:
            refused = await client.post("/repos/add", json=body)
            assert refused.status_code in (400, 422), (body, refused.text)
        not_a_repo = await client.get("/content/git-list-branches", params={"path": "/"})
        assert not_a_repo.status_code == 404
