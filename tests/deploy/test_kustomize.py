"""`kubectl kustomize deploy` renders, every object validates against the Kubernetes schemas (offline, strict),
and the runner pod template keeps the deployment promises (probes, drain, security, writable volumes, secrets)."""

from __future__ import annotations

import json

import kubernetes_validate
import pytest
import yaml

from ambient_runner.settings import RunnerSettings
from tests.deploy.helpers import DEPLOY, K8S_VERSIONS, by_kind


def test_renders_the_expected_objects(rendered):
    assert sorted((o["kind"], o["metadata"]["name"]) for o in rendered) == [
        ("ConfigMap", "ambient-agent-registry"), ("ConfigMap", "ambient-runner-config"),
        ("NetworkPolicy", "ambient-runner-ingress"), ("PodTemplate", "ambient-runner"), ("Service", "ambient-runner")]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_object_validates_against_the_kubernetes_schema(rendered, version):
    for obj in rendered:
        kubernetes_validate.validate(obj, version, strict=True)  # raises with the path of the bad field


def test_registry_configmap_holds_the_registry_file(rendered, registry):
    (configmap,) = [o for o in rendered if o["metadata"]["name"] == "ambient-agent-registry"]
    assert list(configmap["data"]) == ["agent-registry.json"]
    assert json.loads(configmap["data"]["agent-registry.json"]) == registry


def test_pod_template_is_the_source_file_plus_common_labels(rendered):
    (template,) = by_kind(rendered, "PodTemplate")
    source = yaml.safe_load((DEPLOY / "runner-pod-template.yaml").read_text())
    assert template["template"] == source["template"]


@pytest.fixture(scope="module")
def pod_spec(rendered):
    return by_kind(rendered, "PodTemplate")[0]["template"]["spec"]


@pytest.fixture(scope="module")
def container(pod_spec):
    (only,) = pod_spec["containers"]
    return only


def env_of(container) -> dict:
    return {e["name"]: e for e in container["env"]}


def test_port_and_probes(container):
    assert container["ports"] == [{"name": "agui", "containerPort": 8001, "protocol": "TCP"}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": "agui"}
    readiness = " ".join(container["readinessProbe"]["exec"]["command"])
    assert "http://127.0.0.1:8001/ready" in readiness and 'os.environ.get("AGUI_TOKEN"' in readiness
    assert env_of(container)["AGUI_PORT"]["value"] == "8001"


def test_termination_grace_outlasts_the_runner_drain(pod_spec, container):
    grace = float(env_of(container)["RUNNER_SHUTDOWN_GRACE"]["value"])
    assert grace == RunnerSettings.model_fields["runner_shutdown_grace"].default
    # uvicorn's graceful shutdown (grace + 5 s), ending runs (grace), bridge shutdown (grace), then a state sync.
    assert pod_spec["terminationGracePeriodSeconds"] >= (grace + 5) + grace + grace + 15


def test_restricted_security_context(pod_spec, container):
    pod = pod_spec["securityContext"]
    assert pod["runAsNonRoot"] is True and (pod["runAsUser"], pod["runAsGroup"]) == (1001, 0)  # the platform's
    assert container["name"] == "ambient-code-runner"  # the platform's operator derives the status from this name
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    ctx = container["securityContext"]
    assert ctx["allowPrivilegeEscalation"] is False and ctx["privileged"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]} and ctx["readOnlyRootFilesystem"] is True
    assert pod_spec["automountServiceAccountToken"] is False


def test_writable_paths_are_emptydirs(pod_spec, container):
    env = env_of(container)
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    for path in (env["WORKSPACE_PATH"]["value"], env["RUNNER_STATE_ROOT"]["value"], "/tmp", env["HOME"]["value"]):
        assert path in mounts, f"{path} is not writable with a read-only root file system"
        assert "emptyDir" in volumes[mounts[path]] and volumes[mounts[path]]["emptyDir"]["sizeLimit"]
    # the CLI state lives outside the user's workspace (docs/contracts.md section 4)
    assert not env["RUNNER_STATE_ROOT"]["value"].startswith(env["WORKSPACE_PATH"]["value"])


def test_resources_cover_the_measured_peak(container):
    resources = container["resources"]
    measured_peak_mib = 341  # gemini-cli + runner, peak RSS of the process tree during a scripted run
    assert resources["requests"]["memory"].endswith("Mi") and int(resources["requests"]["memory"][:-2]) >= \
        measured_peak_mib * 1.25
    assert resources["limits"]["memory"] == "4Gi" and resources["limits"]["cpu"]


def test_token_and_state_store_come_from_the_platform(container):
    env = env_of(container)
    assert set(env["AGUI_TOKEN"]["valueFrom"]["secretKeyRef"]) == {"name", "key"}  # required, never optional
    assert env["STATE_STORE_URL"]["value"] == "$(STATE_STORE_PREFIX)/$(SESSION_ID)"
    names = [e["name"] for e in container["env"]]
    assert names.index("SESSION_ID") < names.index("STATE_STORE_URL")  # $(VAR) needs the earlier definition
    assert names.index("STATE_STORE_PREFIX") < names.index("STATE_STORE_URL")


def test_service_and_network_policy(rendered):
    (service,) = by_kind(rendered, "Service")
    assert service["spec"]["ports"] == [{"name": "agui", "port": 8001, "targetPort": "agui", "protocol": "TCP"}]
    (policy,) = by_kind(rendered, "NetworkPolicy")
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"] == service["spec"]["selector"]
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8001}]
    (peer,) = rule["from"]  # one peer: the backend's pods (label) in the platform's namespace, both required
    assert peer["podSelector"]["matchLabels"] and peer["namespaceSelector"]["matchLabels"]


def test_the_scripted_model_is_never_switched_on_in_deploy(rendered, container):
    assert "RUNNER_SCRIPTED_MODEL" not in env_of(container)
    for configmap in by_kind(rendered, "ConfigMap"):
        assert "RUNNER_SCRIPTED_MODEL" not in json.dumps(configmap["data"])
