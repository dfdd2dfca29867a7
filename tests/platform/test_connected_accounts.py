"""The person's connected accounts, without an agent CLI: the fetch from a stand-in backend on 127.0.0.1 (headers,
the bot token fallback, CREDENTIAL_IDS, sidecars, a backend outside the cluster), the store the tools read (a real
``git clone`` from a loopback http server that wants the token, ``kubectl``, bash's variables, rotation, clearing)
and the run path of the real service (warning events, clearing after the run). The real CLIs do it in
``test_connected_accounts_real_cli.py``."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from git_http import GitHttpServer
from git_remote import bare_repo
from harness import RunnerHarness
from platform_backend import ConnectedAccounts, StandInBackend
from process_bridge import FakeCliBridge, script
from runners import wait_for

from ambient_runner.bridges.caller import Caller
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.platform.credential_store import CredentialStore
from ambient_runner.platform.credentials import CredentialSource, in_cluster_host
from ambient_runner.platform.env import translate
from ambient_runner.platform.run_credentials import RunCredentials
from ambient_runner.runs.manager import RunManager
from ambient_runner.settings import RunnerSettings
from ambient_runner.stream.encoding import Redactor

SESSION = "session-7a"
PROJECT = "team-a"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5" * 4  # a GitHub token shape: redacted even where its value is unknown
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:1"}
  name: c1
users:
- name: u1
  user: {token: kube-secret-token-123}
contexts:
- context: {cluster: c1, user: u1}
  name: team-a-context
current-context: team-a-context
"""


def accounts_for(user: str, github_token: str = GITHUB_TOKEN) -> dict:
    return {"github": {"token": github_token, "userName": f"{user}-gh", "email": f"{user}@example.com",
                       "provider": "github"},
            "jira": {"url": "https://jira.example", "email": f"{user}@example.com", "apiToken": f"jira-{user}-tok"},
            "gitlab": {"token": f"glpat-{user}-gitlab-token-xx", "instanceUrl": "https://gitlab.example.org",
                       "userName": f"{user}-gl", "email": f"{user}@gitlab.example"},
            "coderabbit": {"apiKey": f"cr-{user}-key-123"},
            "gerrit": {"instances": [{"instanceName": "g", "url": "https://gerrit.example", "authMethod":
                                      "http_basic", "username": user, "httpToken": f"gerrit-{user}-tok"}]},
            "id:kube-1": {"token": KUBECONFIG}}


def settings(tmp_path: Path, backend_url: str, **more) -> RunnerSettings:
    token_file = tmp_path / "bot-token"
    if not token_file.exists():
        token_file.write_text("bot-token-value\n")
    values = {"runner_type": "gemini-cli", "workspace_path": tmp_path / "ws", "runner_state_root": tmp_path / "st",
              "backend_api_url": backend_url, "project_name": PROJECT, "session_id": SESSION,
              "runner_bot_token_file": token_file, "runner_credentials_dir": tmp_path / "creds"} | more
    return RunnerSettings(**values)


@pytest.fixture
def backend():
    server = StandInBackend(accounts=ConnectedAccounts()).start()
    yield server
    server.stop()


def test_only_hosts_inside_the_cluster():
    assert in_cluster_host("backend-service.ambient.svc.cluster.local")
    assert in_cluster_host("backend-service.ambient.svc") and in_cluster_host("127.0.0.1")
    assert in_cluster_host("localhost") and in_cluster_host("::1")
    assert not in_cluster_host("backend.example.com") and not in_cluster_host("svc.example.com")
    assert not in_cluster_host("10.0.0.1") and not in_cluster_host("evil.svc.cluster.local.example.com")


async def test_each_provider_is_fetched_with_the_callers_identity_else_the_bot_token(tmp_path, backend):
    backend.accounts.accounts["ada"] = accounts_for("ada")
    source = CredentialSource(settings(tmp_path, backend.api_url, credential_ids='{"kubeconfig": "kube-1"}'))
    fetched = await source.fetch(Caller("Bearer caller-ada", "ada"))
    assert fetched.warnings == []
    assert fetched.values["github"]["token"] == GITHUB_TOKEN and fetched.values["kubeconfig"]["token"] == KUBECONFIG
    paths = {r.kind: r.path for r in backend.accounts.requests}
    assert paths["github"] == f"/api/projects/{PROJECT}/agentic-sessions/{SESSION}/credentials/github"
    assert paths["id:kube-1"] == f"/api/api/ambient/v1/projects/{PROJECT}/credentials/kube-1/token"
    assert set(paths) == {"github", "gitlab", "jira", "google", "coderabbit", "gerrit", "id:kube-1"}
    assert {r.headers["Authorization"] for r in backend.accounts.requests} == {"Bearer caller-ada"}
    assert {r.headers["X-Runner-Current-User"] for r in backend.accounts.requests} == {"ada"}

    backend.accounts.requests.clear()
    backend.accounts.accounts["u-1"] = accounts_for("u-1")
    fetched = await source.fetch(Caller())  # no caller (the runner's own first turn): the bot token, read fresh
    assert {r.headers["Authorization"] for r in backend.accounts.requests} == {"Bearer bot-token-value"}
    assert all("X-Runner-Current-User" not in r.headers for r in backend.accounts.requests)
    assert fetched.values["jira"]["apiToken"] == "jira-u-1-tok"


async def test_a_refused_caller_token_is_tried_once_more_with_the_bot_token(tmp_path, backend):
    backend.accounts.accounts["ada"] = accounts_for("ada")
    backend.accounts.expired_callers.add("ada")
    fetched = await CredentialSource(settings(tmp_path, backend.api_url)).fetch(Caller("Bearer caller-ada", "ada"))
    assert fetched.warnings == [] and fetched.values["github"]["userName"] == "ada-gh"
    github = [r for r in backend.accounts.requests if r.kind == "github"]
    assert [r.headers["Authorization"] for r in github] == ["Bearer caller-ada", "Bearer bot-token-value"]
    assert [r.headers["X-Runner-Current-User"] for r in github] == ["ada", "ada"]


async def test_a_failing_provider_is_a_warning_and_the_others_arrive(tmp_path, backend):
    backend.accounts.accounts["ada"] = accounts_for("ada")
    backend.accounts.refuse["jira"] = 401
    fetched = await CredentialSource(settings(tmp_path, backend.api_url)).fetch(Caller("Bearer caller-ada", "ada"))
    assert [w.value() for w in fetched.warnings] == [{"provider": "jira", "status": "401"}]
    assert "jira" not in fetched.values and fetched.values["github"]["token"] == GITHUB_TOKEN


async def test_a_provider_that_does_not_answer_is_cut_off_at_the_bound(tmp_path, backend):
    backend.accounts.accounts["ada"] = accounts_for("ada")
    backend.accounts.hang.add("gerrit")
    source = CredentialSource(settings(tmp_path, backend.api_url, runner_credentials_timeout=0.5))
    fetched = await asyncio.wait_for(source.fetch(Caller("Bearer caller-ada", "ada")), timeout=10)
    assert [w.value() for w in fetched.warnings] == [{"provider": "gerrit", "status": "timeout"}]
    assert fetched.values["github"]["token"] == GITHUB_TOKEN


async def test_sidecar_providers_are_not_fetched_and_no_backend_means_no_fetch(tmp_path, backend):
    sidecars = json.dumps({"github": "http://127.0.0.1:1/mcp", "jira": "http://127.0.0.1:2/mcp"})
    await CredentialSource(settings(tmp_path, backend.api_url, credential_mcp_urls=sidecars)).fetch(Caller())
    assert {r.kind for r in backend.accounts.requests} == {"gitlab", "google", "coderabbit", "gerrit"}
    local = CredentialSource(settings(tmp_path, ""))
    assert not local.enabled and (await local.fetch(Caller())).values == {}


async def test_a_backend_outside_the_cluster_is_never_contacted(tmp_path, backend):
    port = backend.api_url.split(":")[2].split("/")[0]
    for outside in (f"http://backend.example.com:{port}/api", f"http://127.0.0.1.nip.io:{port}/api"):
        source = CredentialSource(settings(tmp_path, outside))
        assert not source.enabled and "outside the cluster" in (source.reason_off or "")
        assert (await source.fetch(Caller("Bearer caller-ada", "ada"))).values == {}
    assert backend.accounts.requests == []


def git(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
                          check=False)


def tool_env(store: CredentialStore, home: Path) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1"} | store.environment()


def test_the_tools_read_the_current_accounts_from_the_store(tmp_path):
    repos = tmp_path / "served"
    repos.mkdir()
    bare_repo(repos, "private", {"README.md": "secret project\n"})
    server = GitHttpServer(repos, accepted=GITHUB_TOKEN).start()
    store = CredentialStore(tmp_path / "creds", [server.host])
    store.install()
    env = tool_env(store, tmp_path / "home")
    try:
        assert (tmp_path / "creds").stat().st_mode & 0o777 == 0o700
        failed = git("clone", server.url("private"), "without", env=env, cwd=tmp_path)
        assert failed.returncode != 0  # no account delivered: the server refuses

        store.deliver({k: v for k, v in accounts_for("ada").items() if k != "id:kube-1"}
                      | {"kubeconfig": {"token": KUBECONFIG}})
        cloned = git("clone", server.url("private"), "with", env=env, cwd=tmp_path)
        assert cloned.returncode == 0, cloned.stderr
        assert (tmp_path / "with" / "README.md").read_text() == "secret project\n"
        assert git("config", "user.email", env=env, cwd=tmp_path / "with").stdout.strip() == "ada@example.com"
        assert git("config", "user.name", env=env, cwd=tmp_path / "with").stdout.strip() == "ada-gh"
        hosts = (tmp_path / "creds" / "gh" / "hosts.yml").read_text()
        assert f'oauth_token: "{GITHUB_TOKEN}"' in hosts and 'user: "ada-gh"' in hosts
        assert "gitlab.example.org" in (tmp_path / "creds" / "glab" / "config.yml").read_text()
        context = subprocess.run(["kubectl", "config", "current-context"], env=env, capture_output=True, text=True,
                                 timeout=60, check=False)
        assert context.stdout.strip() == "team-a-context", context.stderr
        gerrit = json.loads(Path(env["GERRIT_CONFIG_PATH"]).read_text())
        assert gerrit["gerrit_hosts"][0]["authentication"]["auth_token"] == "gerrit-ada-tok"
        shown = subprocess.run(["bash", "-c", 'echo "$JIRA_URL|$JIRA_EMAIL|$JIRA_API_TOKEN|$CODERABBIT_API_KEY"'],
                               env=env, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
        assert shown == "https://jira.example|ada@example.com|jira-ada-tok|cr-ada-key-123"
        # A GitLab host gets the GitLab token, any other host nothing.
        ask = "protocol=https\nhost={}\n\n"
        helper = [str(store.helper), "get"]
        answer = subprocess.run(helper, input=ask.format("gitlab.example.org"), capture_output=True, text=True,
                                timeout=30, check=True).stdout
        assert answer == "username=oauth2\npassword=glpat-ada-gitlab-token-xx\n"
        for other in ("example.com", "evilgithub.com.example"):
            assert subprocess.run(helper, input=ask.format(other), capture_output=True, text=True, timeout=30,
                                  check=True).stdout == ""
        assert subprocess.run(helper, input="protocol=http\nhost=github.com\n\n", capture_output=True, text=True,
                              timeout=30, check=True).stdout == ""  # never in clear text beyond loopback

        # Rotated: the same environment (a CLI started before) gets the new token at its next use.
        server.accepted = "ghp_" + "Z9y8X7w6V5" * 4
        store.deliver({"github": {"token": server.accepted, "userName": "ada-gh", "email": "ada@example.com"}})
        assert git("clone", server.url("private"), "rotated", env=env, cwd=tmp_path).returncode == 0
        assert server.presented[-1] == server.accepted
        # Another person's run: nothing of the first person's stays.
        store.deliver({"jira": {"url": "https://jira.b", "email": "bob@b", "apiToken": "jira-bob-tok"}})
        shown = subprocess.run(["bash", "-c", 'echo "$JIRA_API_TOKEN|${GITHUB_TOKEN-unset}|$CODERABBIT_API_KEY"'],
                               env=env | {"GITHUB_TOKEN": "stale-from-spawn"}, capture_output=True, text=True,
                               timeout=30, check=True).stdout.strip()
        assert shown == "jira-bob-tok|unset|"
        assert git("clone", server.url("private"), "bob", env=env, cwd=tmp_path).returncode != 0
        assert git("config", "user.email", env=env, cwd=tmp_path).stdout.strip() == "bot@ambient-code.local"
        assert not Path(env["KUBECONFIG"]).exists() and not Path(env["GERRIT_CONFIG_PATH"]).exists()
        store.clear()
        leftovers = [p for p in (tmp_path / "creds").rglob("*") if p.is_file() and (
            b"ada" in p.read_bytes() or b"bob" in p.read_bytes())]
        assert leftovers == []
    finally:
        server.stop()


async def test_a_run_gets_its_senders_accounts_warnings_on_the_stream_and_nothing_after(tmp_path, backend):
    backend.accounts.accounts["ada"] = accounts_for("ada")
    backend.accounts.refuse["jira"] = 401
    secret_run = script({"text": f"the agent printed {GITHUB_TOKEN}, sk-ant-{'x' * 40} and bot-token-value here"})
    config = settings(tmp_path, backend.api_url)
    values = {k: v for k, v in config.model_dump().items() if v is not None and k != "agui_token"}
    async with RunnerHarness(FakeCliBridge(tmp_path), **values) as runner:
        assert runner.client is not None
        runner.client.headers.update({"X-Caller-Token": "Bearer caller-ada", "X-Current-User-ID": "ada"})
        events = await runner.run("t1", secret_run)
        warnings = [e for e in events if e["type"] == "CUSTOM"]
        assert [(w["name"], w["value"]) for w in warnings] == [
            ("ambient:credential_warning", {"provider": "jira", "status": "401"})]
        assert events[1] == warnings[0]  # right after RUN_STARTED
        assert events[-1]["type"] == "RUN_FINISHED"
        wire = json.dumps(events)
        assert GITHUB_TOKEN not in wire and "sk-ant-xxxx" not in wire and "[REDACTED]" in wire
        assert "caller-ada" not in wire and "bot-token-value" not in wire  # the identities too
        # The run is over: the tools find nothing of ada's any more.
        creds = config.runner_credentials_dir  # cleared by an after-run hook, once the terminal event is out
        await wait_for(lambda: not (creds / "github" / "token").exists(), what="the accounts cleared after the run")
        assert "ada" not in (creds / "exports.sh").read_text()


async def test_keep_credentials_persistent_keeps_them_after_the_run(tmp_path, backend):
    backend.accounts.accounts["ada"] = accounts_for("ada")
    config = settings(tmp_path, backend.api_url, keep_credentials_persistent="true")
    values = {k: v for k, v in config.model_dump().items() if v is not None and k != "agui_token"}
    async with RunnerHarness(FakeCliBridge(tmp_path), **values) as runner:
        assert runner.client is not None
        runner.client.headers.update({"X-Caller-Token": "Bearer caller-ada", "X-Current-User-ID": "ada"})
        await runner.run("t1", script({"text": "done"}))
        await runner.run("t1", script({"text": "done again"}))
        assert (config.runner_credentials_dir / "github" / "token").read_text() == GITHUB_TOKEN
    assert not config.runner_credentials_dir.exists()  # kept across runs, never past the runner: gone at its stop


async def test_two_peoples_runs_at_once_withdraw_the_accounts_from_both(tmp_path, backend):
    backend.accounts.accounts["ada"] = accounts_for("ada")
    backend.accounts.accounts["bob"] = accounts_for("bob", "ghp_" + "BobsOwnTok" * 4)
    config = settings(tmp_path, backend.api_url)
    values = {k: v for k, v in config.model_dump().items() if v is not None and k != "agui_token"}
    token_file = config.runner_credentials_dir / "github" / "token"
    async with RunnerHarness(FakeCliBridge(tmp_path), **values) as runner:
        assert runner.client is not None
        runner.client.headers.update({"X-Caller-Token": "Bearer caller-ada", "X-Current-User-ID": "ada"})
        adas = asyncio.create_task(runner.run("t-ada", script({"text": "working"}, {"stall": True})))
        await wait_for(lambda: token_file.exists() and token_file.read_text() == GITHUB_TOKEN,
                       what="ada's accounts delivered")
        bob = {"X-Caller-Token": "Bearer caller-bob", "X-Current-User-ID": "bob"}
        async with runner.client.stream("POST", "/run", json=runner.run_body("t-bob", script({"text": "hi"})),
                                        headers=bob) as response:
            lines = [line async for line in response.aiter_lines() if line.startswith("data: ")]
        bobs = [json.loads(line[6:]) for line in lines]
        assert [e["value"] for e in bobs if e["type"] == "CUSTOM"] == [
            {"provider": "all", "status": "in use by another person's run"}]
        assert bobs[-1]["type"] == "RUN_FINISHED"
        assert not token_file.exists()  # withdrawn while ada's run still streams: nobody reaches the other's
        assert "bob" not in (config.runner_credentials_dir / "exports.sh").read_text()
        assert (await runner.interrupt("t-ada")).status_code == 200
        events = await adas
        assert events[-1]["type"] == "RUN_FINISHED"
        runner.client.headers.update(bob)
        await runner.run("t-bob", script({"text": "again"}))  # alone again: bob's own accounts
        assert not token_file.exists()  # (and cleared after his run)
        assert any(r.user == "bob" and r.kind == "github" for r in backend.accounts.requests)


async def test_an_mcp_servers_own_credentials_are_fetched_and_given_under_its_variables(tmp_path, backend,
                                                                                      monkeypatch):
    servers = json.dumps({"mcpServers": {"issue-tracker": {"command": "tracker-mcp", "env": {
        "TRACKER_KEY": "${MCP_ISSUE_TRACKER_API_KEY}", "JIRA_TOKEN": "${JIRA_API_TOKEN}"}}}})
    declared = translate({"BACKEND_API_URL": backend.api_url, "MCP_SERVERS_JSON": servers}).values
    assert declared == {"MCP_ISSUE_TRACKER_API_KEY": "", "JIRA_API_TOKEN": ""}  # accepted, filled before runs
    assert translate({"MCP_SERVERS_JSON": servers}).values == {}  # not on the platform: nothing declared
    for name, value in declared.items():
        monkeypatch.setenv(name, value)
    backend.accounts.accounts["ada"] = {"mcp/issue-tracker": {"fields": {"api_key": "tracker-key-of-ada"}}}
    config = settings(tmp_path, backend.api_url, mcp_servers_json=servers)
    credentials = RunCredentials.for_platform(config, RunManager(config, None, Redactor(), RunnerMetrics("x")))
    assert credentials is not None and "mcp/issue-tracker" in credentials.source.kinds()
    fetched = await credentials.source.fetch(Caller("Bearer caller-ada", "ada"))
    credentials.store.install()
    credentials.store.deliver(fetched.values)
    given = credentials.agent_environment(frozenset({"MCP_ISSUE_TRACKER_API_KEY", "JIRA_API_TOKEN", "PATH"}))
    assert given["MCP_ISSUE_TRACKER_API_KEY"] == "tracker-key-of-ada" and given["JIRA_API_TOKEN"] == ""
    assert "PATH" not in given and given["BASH_ENV"].startswith(str(config.runner_credentials_dir))


def test_what_a_tool_changed_in_the_store_is_gone_before_the_next_delivery(tmp_path):
    """The agent's tools run as the runner's user: a link planted in place of a folder, a rewritten helper or a
    folder in place of a file never carry the next sender's tokens anywhere else (found in review)."""
    from ambient_runner.platform.credential_store import CredentialStore

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    store = CredentialStore(tmp_path / "store")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "planted").write_text("left by someone")
    store.install()
    assert not (tmp_path / "store" / "planted").exists()  # made fresh
    (store.root / "github").rmdir()
    (store.root / "github").symlink_to(workspace)
    store.helper.write_text("#!/bin/sh\ncat \"$0\" > /tmp/stolen\n")
    (store.root / "gitconfig").unlink(missing_ok=True)
    (store.root / "gitconfig").mkdir()
    store.deliver({"github": {"token": "ghp_" + "n" * 36, "userName": "B\x01", "email": "b@example.com"}})
    assert list(workspace.iterdir()) == []
    assert "stolen" not in store.helper.read_text() and (store.root / "github" / "token").is_file()
    assert "B\x01" not in (store.root / "gitconfig").read_text()
    store.clear()
    assert not (store.root / "github" / "token").exists() and "ghp_" not in (store.root / "exports.sh").read_text()
    # The folder itself swapped for a link into the workspace: the next delivery makes it again, and neither it nor
    # the runner's stop writes or removes anything where the link pointed.
    (workspace / "exports.sh").write_text("the workspace's own file")
    shutil.rmtree(store.root)
    store.root.symlink_to(workspace)
    store.clear()
    store.deliver({"github": {"token": "ghp_" + "m" * 36, "userName": "c"}})
    assert [p.name for p in workspace.iterdir()] == ["exports.sh"]
    assert not store.root.is_symlink() and (store.root / "github" / "token").read_text() == "ghp_" + "m" * 36
    shutil.rmtree(store.root)
    store.root.symlink_to(workspace)
    store.remove()
    assert not store.root.is_symlink() and (workspace / "exports.sh").read_text() == "the workspace's own file"


def test_a_gitlab_token_goes_only_to_gitlab_hosts(tmp_path):
    import subprocess

    from ambient_runner.platform.credential_store import CredentialStore

    store = CredentialStore(tmp_path / "store")
    store.install()
    store.deliver({"gitlab": {"token": "glpat-" + "t" * 20, "instanceUrl": "https://git.acme.example"}})

    def asked(host: str) -> str:
        return subprocess.run([str(store.helper), "get"], input=f"protocol=https\nhost={host}\n\n", text=True,
                              capture_output=True, timeout=30, check=False).stdout

    assert "glpat-" in asked("gitlab.com") and "glpat-" in asked("git.acme.example")
    for host in ("gitlab.attacker.io", "mygitlab-mirror.evil.com", "github.com"):
        assert "glpat-" not in asked(host), host


def test_a_gitlab_instance_url_that_does_not_parse_falls_back_to_gitlab_com(tmp_path):
    import subprocess

    from ambient_runner.platform.credential_store import CredentialStore

    store = CredentialStore(tmp_path / "store")
    store.install()
    for broken in ("https://[git.acme.example", "http://[::1", "git.acme.example:99999"):
        store.deliver({"gitlab": {"token": "glpat-" + "t" * 20, "instanceUrl": broken}})  # no ValueError

        def asked(host: str) -> str:
            return subprocess.run([str(store.helper), "get"], input=f"protocol=https\nhost={host}\n\n", text=True,
                                  capture_output=True, timeout=30, check=False).stdout

        assert "glpat-" in asked("gitlab.com"), broken
        assert "glpat-" not in asked("git.acme.example"), broken
