"""Run options parsed from forwardedProps (ambient_runner.bridges.options) for each runner's declaration."""

from __future__ import annotations

from pathlib import Path

import pytest

from ambient_runner.bridges.claude.bridge import OPTIONS as CLAUDE
from ambient_runner.bridges.codex_sdk.bridge import OPTIONS as CODEX
from ambient_runner.bridges.gemini_cli.bridge import OPTIONS as GEMINI
from ambient_runner.bridges.gemini_cli.bridge import STREAM_JSON_OPTIONS as GEMINI_STREAM_JSON
from ambient_runner.bridges.options import OptionError, RunOptions
from ambient_runner.settings import RunnerSettings

RUNNERS = {"gemini-cli": GEMINI, "codex-sdk": CODEX, "claude": CLAUDE}


def settings(tmp_path: Path, **values: object) -> RunnerSettings:
    return RunnerSettings(runner_state_root=tmp_path, workspace_path=tmp_path / "ws", **values)  # type: ignore[arg-type]


@pytest.mark.parametrize(("runner", "model"), [
    ("gemini-cli", "gemini-2.5-pro"), ("gemini-cli", "publishers/google/models/gemini-2.5-pro"),
    ("claude", "claude-sonnet-4-5@20250929"), ("claude", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("codex-sdk", "gpt-5-codex"), ("codex-sdk", "openai/gpt-5"), ("codex-sdk", "ft:gpt-4o:acme::abc123")])
def test_each_providers_model_ids_are_taken(runner: str, model: str, tmp_path: Path) -> None:
    assert RUNNERS[runner].parse({"model": f" {model} "}, settings(tmp_path)).model == model


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("model", ["\u0000", "a b", "\u202egemini", "../../v1beta/x", "m?alt=sse", "m#x", "x" * 201,
                                   "a/./b", "-flag", "name.", "ｇemini"])
def test_values_that_are_no_model_name_are_refused(runner: str, model: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError) as refused:
        RUNNERS[runner].parse({"model": model}, settings(tmp_path))
    assert refused.value.option == "model"


def test_gemini_ids_end_before_a_colon(tmp_path: Path) -> None:
    """The Gemini API puts the id in the URL path before ``:streamGenerateContent``."""
    with pytest.raises(OptionError):
        GEMINI.parse({"model": "gemini-2.5-pro:streamGenerateContent"}, settings(tmp_path))


@pytest.mark.parametrize("runner", RUNNERS)
def test_no_props_and_unknown_props_give_defaults(runner: str, tmp_path: Path) -> None:
    options = RUNNERS[runner]
    assert options.parse(None, settings(tmp_path)) == RunOptions()
    assert options.parse({"clientThing": {"x": 1}, "model": None}, settings(tmp_path)) == RunOptions()


@pytest.mark.parametrize("runner", RUNNERS)
def test_model_and_plan_mode(runner: str, tmp_path: Path) -> None:
    parsed = RUNNERS[runner].parse({"model": " some-model ", "mode": "plan"}, settings(tmp_path))
    assert (parsed.model, parsed.mode) == ("some-model", "plan")
    assert RUNNERS[runner].parse({"mode": "default"}, settings(tmp_path)).mode is None


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize(("props", "option"), [
    ({"model": ""}, "model"), ({"model": 3}, "model"), ({"mode": "yolo"}, "mode"), ({"mode": ["plan"]}, "mode"),
    ({"reasoningEffort": "bogus"}, "reasoningEffort"), ({"reasoning_effort": 5}, "reasoningEffort"),
])
def test_bad_values_are_refused_naming_the_option(runner: str, props: dict, option: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError) as caught:
        RUNNERS[runner].parse(props, settings(tmp_path))
    assert caught.value.option == option
    assert option in caught.value.message


@pytest.mark.parametrize("runner", RUNNERS)
def test_deployment_model_list(runner: str, tmp_path: Path) -> None:
    limited = settings(tmp_path, runner_models="model-a, model-b", runner_default_model="model-a")
    assert RUNNERS[runner].parse({"model": "model-b"}, limited).model == "model-b"
    with pytest.raises(OptionError) as caught:
        RUNNERS[runner].parse({"model": "model-c"}, limited)
    assert caught.value.option == "model" and "model-a, model-b" in caught.value.message
    assert RUNNERS[runner].models(limited) == ["model-a", "model-b"]
    spec = {s.name: s for s in RUNNERS[runner].specs(limited)}["model"]
    assert spec.values == ["model-a", "model-b"]


@pytest.mark.parametrize("runner", RUNNERS)
def test_deployment_default_mode(runner: str, tmp_path: Path) -> None:
    planning = settings(tmp_path, runner_default_mode="plan")
    assert RUNNERS[runner].parse({}, planning).mode == "plan"
    assert RUNNERS[runner].parse({"mode": "default"}, planning).mode is None


def test_reasoning_effort_per_runner(tmp_path: Path) -> None:
    assert CODEX.parse({"reasoningEffort": "high"}, settings(tmp_path)).reasoning_effort == "high"
    assert CODEX.parse({"reasoning_effort": "minimal"}, settings(tmp_path)).reasoning_effort == "minimal"
    assert CLAUDE.parse({"reasoningEffort": "max"}, settings(tmp_path)).reasoning_effort == "max"
    with pytest.raises(OptionError, match="minimal"):
        CLAUDE.parse({"reasoningEffort": "minimal"}, settings(tmp_path))
    with pytest.raises(OptionError) as caught:
        GEMINI.parse({"reasoningEffort": "high"}, settings(tmp_path))
    assert caught.value.option == "reasoningEffort" and "not supported" in caught.value.message


def test_specs_list_the_accepted_values(tmp_path: Path) -> None:
    specs = {name: {s.name: s.values for s in o.specs(settings(tmp_path))} for name, o in RUNNERS.items()}
    assert specs["gemini-cli"] == {"model": None, "mode": ["default", "plan"], "approvalPolicy": ["auto", "ask"]}
    assert specs["codex-sdk"]["approvalPolicy"] == specs["claude"]["approvalPolicy"] == ["auto", "ask"]
    stream_json = {spec.name: spec.values for spec in GEMINI_STREAM_JSON.specs(settings(tmp_path))}
    assert stream_json["approvalPolicy"] == ["auto"]  # one process a turn: nobody can answer the CLI
    assert specs["codex-sdk"]["reasoningEffort"] == ["none", "minimal", "low", "medium", "high", "xhigh"]
    assert specs["claude"]["reasoningEffort"] == ["low", "medium", "high", "xhigh", "max"]
