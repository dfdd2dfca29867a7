"""The person's connected accounts reach the agent's tools in each real runner (``python main.py``, its real CLI on
a scripted model that runs one shell command per run), fetched from a stand-in backend on 127.0.0.1:

* every run's fetch carries its sender's identity (``X-Caller-Token`` / ``X-Current-User-ID``), or the bot token
  when the run has none;
* the tool clones from a loopback http git server that wants the GitHub token (and fails without it), sees the git
  identity, ``gh``'s token (its ``GH_CONFIG_DIR/hosts.yml``), ``JIRA_*``, ``KUBECONFIG`` (``kubectl``);
* a token rotated in the backend between two runs is the one the next run's tool uses, by the same CLI process;
* a 401 for Jira alone is a warning event and the run finishes;
* what the tool received is checked out of band (hashes it writes to a file), while everything it prints (the
  tokens, well-known token shapes) is absent from the stream, the runner's log and its spans;
* a second person's run gets that person's accounts and nothing of the first person's.
"""

from __future__ import annotations

import hashlib
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from git_http import GitHttpServer
from git_remote import bare_repo
from harness import check_stream
from otlp_receiver import otlp_receiver
from platform_backend import StandInBackend
from platform_pod import SESSION, entry_model, operator_env

from ambient_runner.settings import ACP_IMAGE_AGENTS
from tests.platform.test_platform_pod import TOKEN, Pod

RUNNERS = ["gemini-cli", "codex-sdk", "claude", *(f"acp-{agent}" for agent in ACP_IMAGE_AGENTS)]
ADA_TOKENS = ["ghp_" + "AdaFirst01" * 4, "ghp_" + "AdaRotated" * 4]
BOB_TOKEN = "ghp_" + "BobsOwnTok" * 4
SHAPES = ["sk-ant-api03-" + "S" * 40, "AKIA" + "Q" * 16, "glpat-" + "p" * 20, "AIza" + "k" * 35,
          "xoxb-1234567890-abcdefghij"]
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c1, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u1, user: {token: kube-token-of-ada-123}}]
contexts: [{name: ada-context, context: {cluster: c1, user: u1}}]
current-context: ada-context
"""
# What the agent runs: what it received goes to a file as hashes (never a value), and it prints everything (the
# token shapes come as its arguments).
PROBE = r"""#!/bin/bash
out="$1"; mkdir -p "$out"
h() { printf '%s' "$1" | sha256sum | cut -c1-64; }
env | grep -E '^(GIT|GH_|BASH_ENV)' > "$out/gitenv"
if GIT_TRACE=1 git clone -q "$2" "$out/repo" 2>"$out/clone.err"; then echo ok > "$out/cloned"; fi
gh_token=$(sed -n 's/^ *oauth_token: "\(.*\)"$/\1/p' "$GH_CONFIG_DIR/hosts.yml" 2>/dev/null)
{
  echo "gh=$(h "$gh_token")"
  echo "github_env=$(h "$GITHUB_TOKEN")"
  echo "jira=$(h "$JIRA_URL|$JIRA_EMAIL|$JIRA_API_TOKEN")"
  echo "email=$(git config user.email)"
  echo "name=$(git config user.name)"
  echo "kube=$(kubectl config current-context 2>/dev/null)"
  p=$$; chain=""; while [ "$p" -gt 1 ]; do chain="$chain $p"; p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2); done
  echo "ancestors=$chain"
} > "$out/seen"
shift 2
echo "printed: $gh_token $GITHUB_TOKEN $JIRA_API_TOKEN $(cat "$BOT_TOKEN_FILE") $*"
"""


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def accounts(user: str, github_token: str, with_kube: bool = True) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "github": {"token": github_token, "userName": f"{user} Hacker", "email": f"{user}@example.com",
                   "provider": "github"},
        "jira": {"url": "https://jira.example", "email": f"{user}@example.com", "apiToken": f"jira-token-of-{user}"}}
    if with_kube:
        answer["id:kube-1"] = {"token": KUBECONFIG}
    return answer


def seen(out: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (out / "seen").read_text().splitlines())


def run(pod: Pod, text: str, caller: str | None) -> list[dict[str, Any]]:
    headers = {"X-Ambient-Session-Token": TOKEN, "Content-Type": "application/json", "Accept": "text/event-stream"}
    if caller:
        headers |= {"X-Caller-Token": f"Bearer caller-{caller}", "X-Current-User-ID": caller}
    body = {"threadId": SESSION, "runId": str(uuid.uuid4()),
            "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": text}]}
    with httpx.Client(timeout=180, trust_env=False) as client, client.stream(
            "POST", f"{pod.url}/", json=body, headers=headers) as response:
        assert response.status_code == 200, response.read()
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    check_stream(events)
    return events


@pytest.mark.real_cli
@pytest.mark.slow
@pytest.mark.parametrize("runner_type", RUNNERS)
def test_connected_accounts_reach_the_tools_fresh_and_never_the_stream(runner_type, tmp_path, isolated_network):
    served = tmp_path / "served"
    served.mkdir()
    bare_repo(served, "private", {"README.md": "ada's private project\n"})
    git_server = GitHttpServer(served, accepted=ADA_TOKENS[0]).start()
    scripted = entry_model(runner_type)
    model = scripted.server().start()
    backend = StandInBackend(session_token=TOKEN).start()
    backend.accounts.accounts["ada"] = accounts("ada", ADA_TOKENS[0])
    backend.accounts.accounts["bob"] = accounts("bob", BOB_TOKEN, with_kube=False)
    (tmp_path / "bot-token").write_text("bot-token-value\n")
    probe = tmp_path / "probe.sh"
    probe.write_text(PROBE)
    workspace = tmp_path / "workspace"
    workspace.mkdir()

    def command(label: str) -> str:
        out = tmp_path / "out" / label  # the variables in the tool's own shell too, not only in a nested bash
        return (f"mkdir -p {out} && printf %s \"$JIRA_API_TOKEN\" | sha256sum > {out}/jira-direct; "
                f"BOT_TOKEN_FILE={tmp_path / 'bot-token'} bash {probe} {out} {git_server.url('private')} "
                f"{' '.join(SHAPES)}")

    with otlp_receiver() as traces:
        env = operator_env(runner_type, workspace=workspace, agui_token=TOKEN, backend_api_url=backend.api_url,
                           RUNNER_BOT_TOKEN_FILE=str(tmp_path / "bot-token"), CREDENTIAL_IDS='{"kubeconfig": "kube-1"}',
                           RUNNER_GITHUB_HOSTS=git_server.host, RUNNER_CREDENTIALS_DIR=str(tmp_path / "creds"),
                           OTEL_EXPORTER_OTLP_ENDPOINT=traces.url, RUNNER_TRACE_CONTENT="true",
                           **scripted.environment(model))
        pod = Pod(runner_type, tmp_path, env)
        try:
            pod.wait_ready()
            streams = []
            # 1. ada's run: her accounts, fetched with her identity.
            model.shell_command = command("ada-1")
            streams.append(run(pod, "check my accounts", "ada"))
            requests = list(backend.accounts.requests)
            assert requests and {r.headers["Authorization"] for r in requests} == {"Bearer caller-ada"}
            assert {r.headers["X-Runner-Current-User"] for r in requests} == {"ada"}
            assert {r.kind for r in requests} == {"github", "gitlab", "jira", "google", "coderabbit", "gerrit",
                                                  "id:kube-1"}
            first = seen(tmp_path / "out" / "ada-1")
            out = tmp_path / "out" / "ada-1"
            assert (out / "cloned").exists(), (out / "clone.err").read_text()
            assert first["gh"] == first["github_env"] == sha(ADA_TOKENS[0])
            assert first["jira"] == sha("https://jira.example|ada@example.com|jira-token-of-ada")
            direct = (tmp_path / "out" / "ada-1" / "jira-direct").read_text().split()[0]
            assert direct == sha("jira-token-of-ada")
            assert (first["email"], first["name"], first["kube"]) == ("ada@example.com", "ada Hacker", "ada-context")

            # 2. ada again: her token rotated in the backend, Jira refused; the same CLI process uses the new token.
            backend.accounts.accounts["ada"]["github"]["token"] = git_server.accepted = ADA_TOKENS[1]
            backend.accounts.refuse["jira"] = 401
            model.shell_command = command("ada-2")
            events = run(pod, "check my accounts again", "ada")
            streams.append(events)
            warnings = [e["value"] for e in events if e.get("name") == "ambient:credential_warning"]
            assert warnings == [{"provider": "jira", "status": "401"}] and events[-1]["type"] == "RUN_FINISHED"
            second = seen(tmp_path / "out" / "ada-2")
            assert (tmp_path / "out" / "ada-2" / "cloned").exists()
            assert git_server.presented[-1] == ADA_TOKENS[1]
            assert second["gh"] == sha(ADA_TOKENS[1]) and second["jira"] == sha("||")
            cli_of = {int(p) for p in first["ancestors"].split()} & {int(p) for p in second["ancestors"].split()}
            children = [p for p in cli_of if _parent(p) == pod.proc.pid]
            assert len(children) == 1, (first["ancestors"], second["ancestors"], pod.proc.pid)  # the same CLI
            backend.accounts.refuse.clear()

            # 3. bob, in the same session: his accounts, nothing of ada's.
            model.shell_command = command("bob")
            streams.append(run(pod, "check my accounts", "bob"))
            bob = seen(tmp_path / "out" / "bob")
            assert bob["gh"] == sha(BOB_TOKEN) and bob["jira"] == sha("https://jira.example|bob@example.com|"
                                                                       "jira-token-of-bob")
            assert (bob["email"], bob["kube"]) == ("bob@example.com", "")
            assert not (tmp_path / "out" / "bob" / "cloned").exists()  # ada's repository: bob's token is refused

            # 4. no caller identity (an automated run): the bot token.
            before = len(backend.accounts.requests)
            model.shell_command = command("bot")
            streams.append(run(pod, "check the accounts", None))
            bot_requests = backend.accounts.requests[before:]
            assert bot_requests and {r.headers["Authorization"] for r in bot_requests} == {"Bearer bot-token-value"}
            assert pod.stop() == 0
        finally:
            pod.kill()
            backend.stop()
            model.stop()
            git_server.stop()
        spans = json.dumps([[s.name, s.attributes, s.status_message] for s in traces.spans])
    wire = json.dumps(streams)
    assert "[REDACTED]" in wire  # the shapes in the command line (and the tool's output, where the CLI streams it)
    if runner_type != "gemini-cli":  # Gemini's ACP tool result carries no shell output
        assert "printed:" in wire
    log = pod.log()
    for secret in [*ADA_TOKENS, BOB_TOKEN, "jira-token-of-ada", "jira-token-of-bob", "kube-token-of-ada-123",
                   "caller-ada", "caller-bob", "bot-token-value", *SHAPES]:
        assert secret not in wire, secret
        assert secret not in log, secret
        assert secret not in spans, secret
    assert "[REDACTED]" in spans  # the spans carried the tool calls (RUNNER_TRACE_CONTENT), redacted
    assert not [p for p in workspace.rglob("*") if p.is_file() and ADA_TOKENS[1].encode() in p.read_bytes()]


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[1])



ECHO_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "echo_server.py"


@pytest.mark.real_cli
@pytest.mark.slow
@pytest.mark.parametrize("runner_type", RUNNERS)
def test_an_mcp_server_gets_the_current_jira_token(runner_type, tmp_path, isolated_network):
    """An MCP server whose env refers to ``${JIRA_API_TOKEN}`` (the echo server answers the hash of its
    ``ECHO_SECRET``, which the scripted model receives): the person's token at the first run, the rotated one at the
    next (the CLI is restarted for it), never the token itself in the stream or the log."""
    scripted = entry_model(runner_type)
    model = scripted.server().start()
    backend = StandInBackend(session_token=TOKEN).start()
    jira = ["jira-token-one-1234", "jira-token-two-5678"]
    backend.accounts.accounts["ada"] = {"jira": {"url": "https://jira.example", "email": "ada@example.com",
                                                 "apiToken": jira[0]}}
    (tmp_path / "bot-token").write_text("bot-token-value\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    tracker = {"custom": {"tracker": {"type": "stdio", "command": sys.executable, "args": [str(ECHO_SERVER)],
                                      "env": {"ECHO_SECRET": "${JIRA_API_TOKEN}"}}}}
    env = operator_env(runner_type, workspace=workspace, agui_token=TOKEN, backend_api_url=backend.api_url,
                       custom_mcp_servers=tracker, RUNNER_BOT_TOKEN_FILE=str(tmp_path / "bot-token"),
                       RUNNER_CREDENTIALS_DIR=str(tmp_path / "creds"), **scripted.environment(model))
    pod = Pod(runner_type, tmp_path, env)
    streams = []
    try:
        pod.wait_ready()
        for token in jira:
            backend.accounts.accounts["ada"]["jira"]["apiToken"] = token
            before = len(model.requests)
            streams.append(run(pod, "MCPTOOL:tracker.say", "ada"))
            seen_by_model = json.dumps([r.body for r in model.requests[before:]])
            assert f"sha256:{sha(token)[:12]}" in seen_by_model, (token, streams[-1][-1])
        assert pod.stop() == 0
    finally:
        pod.kill()
        backend.stop()
        model.stop()
    wire, log = json.dumps(streams), pod.log()
    for token in jira:
        assert token not in wire and token not in log
