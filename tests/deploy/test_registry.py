"""The agent registry agrees with the runner: each entry names a bridge the runner has, its state dir, exactly the
credentials that bridge's auth reads (any one of them alone is enough), and models the pinned CLI knows."""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field

from ambient_runner.bridges import registry as bridge_registry
from ambient_runner.bridges.claude import auth as claude_auth
from ambient_runner.bridges.codex_sdk import auth as codex_auth
from ambient_runner.bridges.codex_sdk import config as codex_config
from ambient_runner.bridges.gemini_cli import auth as gemini_auth
from ambient_runner.bridges.gemini_cli import cli_config as gemini_config
from ambient_runner.settings import DEFAULT_STATE_DIRS, RUNNER_TYPES
from tests.deploy.conftest import ROOT

# What each bridge's auth module reads as a credential that is enough on its own.
PRIMARY_CREDENTIALS = {
    "claude": claude_auth.PRIMARY_CREDENTIALS,
    "gemini-cli": gemini_auth.API_KEY_VARS,
    "codex-sdk": codex_auth.KEY_VARIABLES,
}


def resolves(runner_type: str, environ: dict[str, str]) -> bool:
    if runner_type == "claude":
        return claude_auth.resolve_auth(environ).ok
    if runner_type == "gemini-cli":
        return gemini_auth.resolve_auth(environ).ok
    return codex_auth.resolve_auth(environ).ok


class InternalEnv(BaseModel):
    model_config = ConfigDict(extra="forbid")
    RUNNER_TYPE: str
    RUNNER_STATE_DIR: str


class RegistryEntry(BaseModel):
    """CONTRACTS.md section 1."""

    model_config = ConfigDict(extra="forbid")
    id: str
    displayName: str = Field(min_length=1)
    description: str = Field(min_length=1)
    defaultModel: str
    models: list[str] = Field(min_length=1)
    requiredSecrets: list[str] = Field(min_length=1)
    internalEnvVars: InternalEnv


def test_three_entries_in_the_contract_schema(registry):
    entries = [RegistryEntry.model_validate(e) for e in registry]
    assert [e.id for e in entries] == ["claude", "gemini-cli", "codex-sdk"]


@pytest.fixture(params=["claude", "gemini-cli", "codex-sdk"])
def entry(request, registry):
    return RegistryEntry.model_validate(next(e for e in registry if e["id"] == request.param))


def test_runner_type_is_a_bridge_the_runner_knows(entry):
    runner_type = entry.internalEnvVars.RUNNER_TYPE
    assert runner_type == entry.id
    assert runner_type in RUNNER_TYPES and runner_type in bridge_registry.BRIDGES
    assert entry.internalEnvVars.RUNNER_STATE_DIR == DEFAULT_STATE_DIRS[runner_type]


def test_required_secrets_are_what_the_bridge_auth_reads(entry):
    runner_type = entry.internalEnvVars.RUNNER_TYPE
    assert sorted(entry.requiredSecrets) == sorted(PRIMARY_CREDENTIALS[runner_type])
    assert not resolves(runner_type, {})
    for name in entry.requiredSecrets:  # "any of": each one alone is enough
        assert resolves(runner_type, {name: "a-credential-value"}), name


def test_default_model_is_one_of_the_models(entry):
    assert entry.defaultModel in entry.models
    assert len(set(entry.models)) == len(entry.models)


def test_defaults_match_the_bridges_own_fallbacks(registry):
    """A run that names no model gets the same model with or without RUNNER_DEFAULT_MODEL."""
    entries = {e["id"]: e for e in registry}
    assert entries["gemini-cli"]["defaultModel"] == gemini_config.DEFAULT_MODEL
    assert entries["gemini-cli"]["models"] == list(gemini_config.DEFAULT_MODELS)
    assert entries["codex-sdk"]["defaultModel"] == codex_config.DEFAULT_MODEL


def _cli_files(runner_type: str) -> list[Path]:
    if runner_type == "claude":
        import claude_agent_sdk

        return [Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"]
    if runner_type == "codex-sdk":
        from codex_cli_bin import bundled_codex_path

        return [Path(bundled_codex_path())]
    return sorted((ROOT / "node_modules" / "@google" / "gemini-cli" / "bundle").glob("*.js"))


def test_every_model_is_named_in_the_pinned_cli(entry):
    """The model names appear in the CLI the image ships (Codex's bundled catalog, Claude's and Gemini's lists)."""
    files = _cli_files(entry.internalEnvVars.RUNNER_TYPE)
    assert files and all(f.is_file() for f in files)
    missing = set(entry.models)
    for path in files:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            missing = {m for m in missing if data.find(f'"{m}"'.encode()) < 0 and data.find(f"'{m}'".encode()) < 0}
        if not missing:
            break
    assert not missing, f"not in the pinned {entry.id} CLI: {sorted(missing)}"
