"""deploy/render.py renders a session's Pod and Service the way the platform does, and the env it renders makes a
runner that starts as the registry entry says: the right bridge, state dir, models, and ready with any one secret."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from ambient_runner.bridges.claude import auth as claude_auth
from ambient_runner.bridges.codex_sdk import auth as codex_auth
from ambient_runner.bridges.gemini_cli import auth as gemini_auth
from ambient_runner.bridges.registry import create_bridge
from ambient_runner.settings import load_settings
from tests.deploy.helpers import DEPLOY, K8S_VERSIONS

ENTRIES = ["claude-agent-sdk", "gemini-cli", "codex-sdk", "acp-opencode", "acp-claude-agent-acp"]
CREDENTIAL_ENV = {*claude_auth.SECRET_NAMES, *claude_auth.MISSING_HINT, *gemini_auth.API_KEY_VARS,
                  *gemini_auth.VERTEX_VARS, gemini_auth.OAUTH_FILE_VAR, gemini_auth.GATEWAY_VAR,
                  *codex_auth.KEY_VARIABLES, codex_auth.AUTH_FILE_VARIABLE, codex_auth.BASE_URL_VARIABLE,
                  "ANTHROPIC_BASE_URL", "GOOGLE_APPLICATION_CREDENTIALS", "RUNNER_SCRIPTED_MODEL"}


def render_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DEPLOY / "render.py"), *args], capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.mark.parametrize("entry_id", ENTRIES)
def test_command_renders_a_valid_pod_and_service(entry_id, registry):
    result = render_cli("--entry", entry_id, "--session", "s1", "--image", "localhost/ambient-runner:dev")
    assert result.returncode == 0, result.stderr
    pod, service = yaml.safe_load_all(result.stdout)
    for obj in (pod, service):
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)
    assert (pod["kind"], pod["metadata"]["name"]) == ("Pod", "s1-runner")
    assert (service["kind"], service["metadata"]["name"]) == ("Service", "session-s1")
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "ambient-runner", "ambient-code.io/session": "s1"}
    assert all(pod["metadata"]["labels"][k] == v for k, v in service["spec"]["selector"].items())
    assert pod["metadata"]["labels"]["ambient-code.io/agent"] == entry_id
    assert pod["spec"]["containers"][0]["image"] == "localhost/ambient-runner:dev"


@pytest.mark.parametrize("entry_id", ENTRIES)
def test_the_pod_runs_the_entrys_own_image(entry_id, registry, render):
    entry = render.find_entry(registry, entry_id)
    pod, _ = render.render_session(entry, "s1")
    runner = entry["container"]["env"]["RUNNER_TYPE"].removesuffix("-agent-sdk")  # claude-agent-sdk: claude
    if runner == "acp":  # one image per ACP agent
        runner = f"acp-{entry['container']['env']['ACP_AGENT']}"
    assert pod["spec"]["containers"][0]["image"] == entry["container"]["image"] == f"ambient-runner-{runner}:latest"
    pod, _ = render.render_session(entry, "s1", image="registry.example/ambient-runner:1.2")
    assert pod["spec"]["containers"][0]["image"] == "registry.example/ambient-runner:1.2"


def test_gemini_session_env_in_full(render, registry):
    entry = render.find_entry(registry, "gemini-cli")
    pod, _ = render.render_session(entry, "s1", user_env={"INITIAL_PROMPT": "Fix the tests"})
    env = pod["spec"]["containers"][0]["env"]
    assert env == [
        {"name": "SESSION_ID", "value": "s1"},
        {"name": "AGUI_PORT", "value": "8001"},
        {"name": "AGUI_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s1-runner-token", "key": "token"}}},
        {"name": "WORKSPACE_PATH", "value": "/workspace"},
        {"name": "RUNNER_STATE_ROOT", "value": "/var/lib/ambient-runner"},
        {"name": "RUNNER_SHUTDOWN_GRACE", "value": "20"},
        {"name": "HOME", "value": "/tmp"},
        {"name": "STATE_STORE_PREFIX", "valueFrom": {"configMapKeyRef": {"name": "ambient-runner-config",
                                                                         "key": "STATE_STORE_PREFIX"}}},
        {"name": "STATE_STORE_URL", "value": "$(STATE_STORE_PREFIX)/$(SESSION_ID)"},
        {"name": "AWS_ACCESS_KEY_ID", "valueFrom": {"secretKeyRef": {
            "name": "ambient-runner-state-store", "key": "AWS_ACCESS_KEY_ID", "optional": True}}},
        {"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": {"secretKeyRef": {
            "name": "ambient-runner-state-store", "key": "AWS_SECRET_ACCESS_KEY", "optional": True}}},
        {"name": "RUNNER_TYPE", "value": "gemini-cli"},
        {"name": "RUNNER_STATE_DIR", "value": ".gemini"},
        {"name": "RUNNER_DEFAULT_MODEL", "value": "gemini-2.5-flash"},
        {"name": "RUNNER_MODELS", "value": "gemini-2.5-flash,gemini-2.5-pro,gemini-2.5-flash-lite"},
        {"name": "GEMINI_API_KEY", "valueFrom": {"secretKeyRef": {
            "name": "ambient-runner-credentials", "key": "GEMINI_API_KEY", "optional": True}}},
        {"name": "GOOGLE_API_KEY", "valueFrom": {"secretKeyRef": {
            "name": "ambient-runner-credentials", "key": "GOOGLE_API_KEY", "optional": True}}},
        {"name": "INITIAL_PROMPT", "value": "Fix the tests"},
    ]


def test_refuses_the_scripted_model_and_entry_overrides():
    result = render_cli("--entry", "codex-sdk", "--session", "s1", "--env", "RUNNER_SCRIPTED_MODEL=true")
    assert result.returncode == 2 and "never set in a deployed runner" in result.stderr
    result = render_cli("--entry", "codex-sdk", "--session", "s1", "--env", "RUNNER_TYPE=claude")
    assert result.returncode == 2 and "cannot be overridden" in result.stderr
    result = render_cli("--entry", "langgraph", "--session", "s1")
    assert result.returncode == 2 and "entries: claude-agent-sdk, gemini-cli, codex-sdk" in result.stderr
    result = render_cli("--entry", "claude-agent-sdk", "--session", "Bad_Name")
    assert result.returncode == 2 and "lowercase" in result.stderr


def test_user_env_replaces_template_values_and_json_output():
    result = render_cli("--entry", "claude-agent-sdk", "--session", "s2", "--env", "RUNNER_SHUTDOWN_GRACE=30",
                        "--output", "json", "--namespace", "team-a", "--secret-name", "team-a-llm-keys")
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    pod = listing["items"][0]
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["RUNNER_SHUTDOWN_GRACE"] == {"name": "RUNNER_SHUTDOWN_GRACE", "value": "30"}
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]].count("RUNNER_SHUTDOWN_GRACE") == 1
    assert env["ANTHROPIC_API_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "team-a-llm-keys"
    assert {o["metadata"]["namespace"] for o in listing["items"]} == {"team-a"}


def resolve_pod_env(env: list[dict], secrets: dict[str, str], configmap: dict[str, str]) -> dict[str, str]:
    """The container environment Kubernetes builds: literal values with $(VAR) references expanded, secret and
    configmap keys resolved, absent optional keys left out."""
    resolved: dict[str, str] = {}
    for item in env:
        if "value" in item:
            resolved[item["name"]] = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                                            lambda m: resolved.get(m.group(1), m.group(0)), item["value"])
            continue
        source = item["valueFrom"]
        ref = source.get("secretKeyRef") or source["configMapKeyRef"]
        store = secrets if "secretKeyRef" in source else configmap
        if ref["key"] in store:
            resolved[item["name"]] = store[ref["key"]]
        else:
            assert ref.get("optional"), f"{item['name']}: required key {ref['key']} is missing"
    return resolved


@pytest.fixture
def pod_environment(monkeypatch, tmp_path):
    """Put a rendered pod's environment in place of this process's, as the container would see it."""
    for name in CREDENTIAL_ENV:
        monkeypatch.delenv(name, raising=False)

    def apply(environment: dict[str, str]) -> None:
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        # the pod's emptyDir mounts, here
        monkeypatch.setenv("WORKSPACE_PATH", str(tmp_path / "workspace"))
        monkeypatch.setenv("RUNNER_STATE_ROOT", str(tmp_path / "state"))
        (tmp_path / "workspace").mkdir(exist_ok=True)

    return apply


@pytest.mark.parametrize("entry_id", ENTRIES)
def test_rendered_env_starts_the_entrys_runner(entry_id, registry, render, pod_environment, tmp_path):
    entry = render.find_entry(registry, entry_id)
    pod, _ = render.render_session(entry, "s1")
    secret_name = entry["auth"]["requiredSecretKeys"][-1]  # any one of them is enough
    env = resolve_pod_env(pod["spec"]["containers"][0]["env"], {"token": "session-token", secret_name: "key-1"},
                          {"STATE_STORE_PREFIX": "s3://bucket/sessions"})
    assert env["STATE_STORE_URL"] == "s3://bucket/sessions/s1"
    pod_environment(env)
    settings = load_settings()
    assert create_bridge(settings).framework == entry_id and not settings.runner_scripted_model
    assert settings.state_dir == tmp_path / "state" / entry["sandbox"]["stateDir"]
    assert settings.runner_default_model == entry["defaultModel"]
    assert settings.model_list == [m["value"] for m in entry["models"]]
    assert settings.secret_values() == ["session-token"]
    readiness = create_bridge(settings).readiness()
    assert readiness.ready, readiness


@pytest.mark.parametrize("entry_id", ENTRIES)
def test_without_any_secret_the_runner_names_the_required_secrets(entry_id, registry, render, pod_environment):
    entry = render.find_entry(registry, entry_id)
    pod, _ = render.render_session(entry, "s1")
    pod_environment(resolve_pod_env(pod["spec"]["containers"][0]["env"], {"token": "t"}, {"STATE_STORE_PREFIX": "s3://bucket/sessions"}))
    readiness = create_bridge(load_settings()).readiness()
    assert not readiness.ready
    assert set(entry["auth"]["requiredSecretKeys"]) <= set(readiness.missing)
