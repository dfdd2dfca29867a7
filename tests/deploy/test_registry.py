"""The agent registry agrees with the runner: each entry, in the platform operator's schema, names a bridge the runner
has, its state dir, exactly the credentials that bridge's auth reads (any one of them alone is enough), and models
the pinned CLI knows; its id is the framework the runner's /capabilities reports (the platform UI matches them). The
ACP runner has an entry per preset (ACP_AGENT), each with its own framework, image, model API and models."""

from __future__ import annotations

import mmap
import os
import subprocess
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from ambient_runner.bridges import registry as bridge_registry
from ambient_runner.bridges.acp import model_apis as acp_model_apis
from ambient_runner.bridges.acp import presets as acp_presets
from ambient_runner.bridges.claude import auth as claude_auth
from ambient_runner.bridges.codex_sdk import auth as codex_auth
from ambient_runner.bridges.codex_sdk import config as codex_config
from ambient_runner.bridges.gemini_cli import auth as gemini_auth
from ambient_runner.bridges.gemini_cli import config as gemini_config
from ambient_runner.settings import (
    ACP_IMAGE_AGENTS,
    DEFAULT_STATE_DIRS,
    RUNNER_TYPE_ALIASES,
    RUNNER_TYPES,
    RunnerSettings,
    image_for,
)
from tests.deploy.helpers import ROOT

# What each bridge's auth module reads as a credential that is enough on its own (the ACP runner's: its preset's
# model API's, ``preset_credentials``).
PRIMARY_CREDENTIALS = {
    "claude": claude_auth.PRIMARY_CREDENTIALS,
    "gemini-cli": gemini_auth.API_KEY_VARS,
    "codex-sdk": codex_auth.KEY_VARIABLES,
}


def preset(agent: str | None) -> acp_presets.AcpPreset:
    found = acp_presets.preset_of(agent or "")
    assert found is not None, agent
    return found


def primary_credentials(entry: RegistryEntry) -> tuple[str, ...]:
    if entry.runner_type == "acp":
        return preset(entry.container.env.ACP_AGENT).model_api.keys_alone
    return tuple(PRIMARY_CREDENTIALS[entry.runner_type])


def resolves(entry: RegistryEntry, environ: dict[str, str]) -> bool:
    runner_type = entry.runner_type
    if runner_type == "claude":
        return claude_auth.resolve_auth(environ).ok
    if runner_type == "gemini-cli":
        return gemini_auth.resolve_auth(environ).ok
    if runner_type == "acp":
        return acp_model_apis.configured_key(preset(entry.container.env.ACP_AGENT).model_api, environ) is not None
    return codex_auth.resolve_auth(environ).ok


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InternalEnv(Strict):
    RUNNER_TYPE: str
    ACP_AGENT: str | None = None  # RUNNER_TYPE=acp only: the agent's preset
    RUNNER_STATE_DIR: str


class ContainerEnv(InternalEnv):
    RUNNER_DEFAULT_MODEL: str
    RUNNER_MODELS: str


class Amounts(Strict):
    cpu: str
    memory: str


class Resources(Strict):
    requests: Amounts
    limits: Amounts


class Container(Strict):
    image: str = Field(min_length=1)
    port: int
    env: ContainerEnv
    resources: Resources


class Seed(Strict):
    cloneRepos: bool
    hydrateState: bool


class Sandbox(Strict):
    stateDir: str
    persistence: Literal["s3", "none"]
    workspaceSize: str
    terminationGracePeriod: int
    seed: Seed


class Auth(Strict):
    requiredSecretKeys: list[str] = Field(min_length=1)
    secretKeyLogic: Literal["any"]
    vertexSupported: bool


class Model(Strict):
    value: str
    label: str = Field(min_length=1)


class RegistryEntry(Strict):
    """The platform operator's schema (research/platform-backend-contract.md section 4), the design's defaultModel
    and models, and docs/contracts.md section 1's requiredSecrets and internalEnvVars."""

    id: str
    displayName: str = Field(min_length=1)
    description: str = Field(min_length=1)
    framework: str
    provider: Literal["anthropic", "google", "openai"]
    container: Container
    sandbox: Sandbox
    auth: Auth
    featureGate: str
    defaultModel: str
    models: list[Model] = Field(min_length=1)
    requiredSecrets: list[str] = Field(min_length=1)
    internalEnvVars: InternalEnv

    @property
    def runner_type(self) -> str:
        return RUNNER_TYPE_ALIASES.get(self.container.env.RUNNER_TYPE, self.container.env.RUNNER_TYPE)

    @property
    def image_kind(self) -> str:
        """The image's kind in deploy/image/images.sh: the runner type, acp-<agent> for the ACP runner."""
        return f"acp-{self.container.env.ACP_AGENT}" if self.runner_type == "acp" else self.runner_type

    @property
    def model_values(self) -> list[str]:
        return [m.value for m in self.models]


ENTRY_IDS = ["claude-agent-sdk", "gemini-cli", "codex-sdk", "acp-opencode", "acp-claude-agent-acp", "acp-qwen-code",
             "acp-codex-acp"]


def test_the_entries_in_the_operators_schema(registry):
    entries = [RegistryEntry.model_validate(e) for e in registry]
    assert [e.id for e in entries] == ENTRY_IDS  # the Claude entry keeps the platform's id


@pytest.fixture(params=ENTRY_IDS)
def entry(request, registry):
    return RegistryEntry.model_validate(next(e for e in registry if e["id"] == request.param))


def test_runner_type_is_a_bridge_the_runner_knows(entry):
    runner_type = entry.runner_type
    assert runner_type in RUNNER_TYPES and runner_type in bridge_registry.BRIDGES
    assert entry.container.env.RUNNER_STATE_DIR == entry.sandbox.stateDir == DEFAULT_STATE_DIRS[runner_type]
    assert entry.internalEnvVars.model_dump().items() <= entry.container.env.model_dump().items()
    assert entry.container.port == 8001 and entry.framework == entry.id
    # ACP_AGENT names a preset with an image of its own, and the platform may not change it (internalEnvVars)
    assert (entry.container.env.ACP_AGENT is not None) == (runner_type == "acp")
    if runner_type == "acp":
        assert entry.internalEnvVars.ACP_AGENT == entry.container.env.ACP_AGENT
        assert entry.container.env.ACP_AGENT in acp_presets.WITH_IMAGE
        agent = preset(entry.container.env.ACP_AGENT)
        assert entry.id == f"acp-{agent.name}" and entry.provider == agent.model_api.provider


def test_every_acp_preset_with_an_image_has_an_entry(registry):
    agents = [e["container"]["env"].get("ACP_AGENT") for e in registry if e["container"]["env"]["RUNNER_TYPE"] == "acp"]
    assert sorted(agents) == sorted(acp_presets.WITH_IMAGE)
    assert set(ACP_IMAGE_AGENTS) <= set(acp_presets.PRESETS)  # every preset with an image is a preset


def test_each_entry_runs_its_runners_own_image(entry):
    """The image built with RUNNER_TYPE=<runner> (deploy/image/images.sh), which refuses to start another runner."""
    assert entry.container.image == f"{image_for(entry.runner_type, entry.container.env.ACP_AGENT or '')}:latest"
    built = subprocess.run(["bash", "-c", '. deploy/image/images.sh && image_name "$0"', entry.image_kind], cwd=ROOT,
                           env={"PATH": os.environ["PATH"], "IMAGE_TAG": "latest", "IMAGE_REPO": "ambient-runner"},
                           capture_output=True, text=True, timeout=30, check=True)
    assert built.stdout.strip() == entry.container.image


def test_framework_is_what_capabilities_reports(entry, tmp_path):
    """The bridge the entry's environment makes (an ACP one: its preset's framework, acp-<agent>)."""
    settings = RunnerSettings(runner_type=entry.runner_type, acp_agent=entry.container.env.ACP_AGENT or "opencode",
                              workspace_path=tmp_path / "workspace", runner_state_root=tmp_path / "state")
    bridge = bridge_registry.create_bridge(settings)
    assert bridge.framework == bridge.capabilities().framework == entry.id


def test_models_reach_the_runner_through_the_container_env(entry):
    assert entry.container.env.RUNNER_MODELS.split(",") == entry.model_values
    assert entry.container.env.RUNNER_DEFAULT_MODEL == entry.defaultModel


def test_required_secrets_are_what_the_bridge_auth_reads(entry):
    assert entry.auth.requiredSecretKeys == entry.requiredSecrets
    assert sorted(entry.requiredSecrets) == sorted(primary_credentials(entry))
    assert not resolves(entry, {})
    for name in entry.requiredSecrets:  # "any of": each one alone is enough
        assert resolves(entry, {name: "a-credential-value"}), name


def test_default_model_is_one_of_the_models(entry):
    assert entry.defaultModel in entry.model_values
    assert len(set(entry.model_values)) == len(entry.model_values)


def test_defaults_match_the_bridges_own_fallbacks(registry):
    """A run that names no model gets the same model with or without RUNNER_DEFAULT_MODEL."""
    entries = {e["id"]: e for e in registry}
    assert entries["gemini-cli"]["defaultModel"] == gemini_config.DEFAULT_MODEL
    assert [m["value"] for m in entries["gemini-cli"]["models"]] == list(gemini_config.DEFAULT_MODELS)
    assert entries["codex-sdk"]["defaultModel"] == codex_config.DEFAULT_MODEL
    for agent in acp_presets.WITH_IMAGE:
        assert entries[f"acp-{agent}"]["defaultModel"] == preset(agent).default_model


def _cli_files(entry: RegistryEntry) -> list[Path]:
    runner_type = entry.runner_type
    if runner_type == "claude":
        import claude_agent_sdk

        return [Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"]
    if runner_type == "codex-sdk":
        from codex_cli_bin import bundled_codex_path

        return [Path(bundled_codex_path())]
    if entry.container.env.ACP_AGENT == "claude-agent-acp":  # the Claude Code binary its Claude Agent SDK starts
        return sorted((ROOT / "node_modules" / "@anthropic-ai").glob("claude-agent-sdk-linux-*/claude"))
    if entry.container.env.ACP_AGENT == "codex-acp":  # its own Codex's binary (its bundled model catalog)
        return sorted((ROOT / "node_modules" / "@openai").glob("codex-linux-*/vendor/*/bin/codex"))
    if entry.container.env.ACP_AGENT == "qwen-code":  # it runs the models the runner declares to it: the Gemini API's
        return sorted((ROOT / "node_modules" / "@google" / "gemini-cli" / "bundle").glob("*.js"))
    if runner_type == "acp":  # the agent's own binary (opencode: a models.dev catalog inside)
        argv = preset(entry.container.env.ACP_AGENT).argv()
        return [Path(argv[0]).resolve()] if argv else []
    return sorted((ROOT / "node_modules" / "@google" / "gemini-cli" / "bundle").glob("*.js"))


def test_every_model_is_named_in_the_pinned_cli(entry):
    """The model names appear in the CLI the image ships (Codex's bundled catalog, Claude's and Gemini's lists)."""
    files = _cli_files(entry)
    assert files and all(f.is_file() for f in files)
    missing = set(entry.model_values)
    for path in files:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            missing = {m for m in missing if data.find(f'"{m}"'.encode()) < 0 and data.find(f"'{m}'".encode()) < 0}
        if not missing:
            break
    assert not missing, f"not in the pinned {entry.id} CLI: {sorted(missing)}"
