"""Run options with each real CLI on its scripted model, through the real service (RunnerHarness)."""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_kits import RUNNERS, clean_credentials, runner_kit

pytestmark = [pytest.mark.real_cli, pytest.mark.parametrize("runner_type", RUNNERS)]

MODELS = {"gemini-cli": ("gemini-2.5-flash", "gemini-2.5-pro"), "codex-sdk": ("gpt-5.5", "gpt-5.4"),
          "claude": ("claude-sonnet-4-5", "claude-haiku-4-5")}
WRITE_PROMPT = "Create out.txt with hello"  # the scripted model answers with a shell call: echo hello > out.txt


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_credentials(monkeypatch)


async def test_the_chosen_model_reaches_the_model_request(runner_type: str, tmp_path: Path,
                                                          isolated_network: None) -> None:
    default, other = MODELS[runner_type]
    async with runner_kit(runner_type, tmp_path, runner_models=f"{default},{other}",
                          runner_default_model=default) as kit:
        first = await kit.runner.run("t-model", "NOTOOL hello")
        seen_default = kit.requested_models()
        chosen = await kit.runner.run("t-model", "NOTOOL again", {"model": other, "clientProp": {"x": 1}})
        seen_all = kit.requested_models()
        caps = (await kit.runner.client.get("/capabilities")).json()
    assert first[-1]["type"] == chosen[-1]["type"] == "RUN_FINISHED"
    assert seen_default and set(seen_default) == {default}
    assert seen_all[len(seen_default):] and set(seen_all[len(seen_default):]) == {other}
    assert caps["custom"]["models"] == [default, other] and caps["custom"]["defaultModel"] == default
    assert {o["name"]: o.get("values") for o in caps["custom"]["options"]}["model"] == [default, other]


async def test_plan_mode_prevents_the_write_the_same_prompt_does_otherwise(runner_type: str, tmp_path: Path,
                                                                           isolated_network: None) -> None:
    async with runner_kit(runner_type, tmp_path) as kit:
        out = kit.settings.workspace_path / "out.txt"
        planned = await kit.runner.run("t-plan", WRITE_PROMPT, {"mode": "plan"})
        written_in_plan = out.exists()
        normal = await kit.runner.run("t-normal", WRITE_PROMPT)
        written_normally = out.exists()
    assert planned[-1]["type"] == "RUN_FINISHED", planned[-1]
    assert not written_in_plan
    assert normal[-1]["type"] == "RUN_FINISHED", normal[-1]
    assert written_normally and out.read_text().strip() == "hello"


async def test_bad_option_values_are_422_naming_the_option(runner_type: str, tmp_path: Path,
                                                          isolated_network: None) -> None:
    bad = [({"mode": "yolo"}, "mode"), ({"model": "not-offered"}, "model"),
           ({"reasoningEffort": "extreme"}, "reasoningEffort")]
    if runner_type == "gemini-cli":
        bad.append(({"reasoningEffort": "high"}, "reasoningEffort"))  # the Gemini CLI has no such setting
    async with runner_kit(runner_type, tmp_path, runner_models=",".join(MODELS[runner_type])) as kit:
        assert kit.runner.client is not None
        answers = []
        for props, option in bad:
            response = await kit.runner.client.post("/run", json=kit.runner.run_body("t-bad", "NOTOOL hi", props))
            answers.append((response.status_code, response.json()["code"],
                            response.json()["details"]["option"], option))
        model_requests = kit.model_requests()
    assert answers == [(422, "INVALID_OPTION", option, option) for _, option in bad]
    assert model_requests == []  # refused before any CLI ran


async def test_reasoning_effort_reaches_the_model_request(runner_type: str, tmp_path: Path,
                                                          isolated_network: None) -> None:
    if runner_type == "gemini-cli":
        pytest.skip("the Gemini CLI has no reasoning-effort setting (refused with 422, tested above)")
    async with runner_kit(runner_type, tmp_path) as kit:
        events = await kit.runner.run("t-effort", "NOTOOL think hard", {"reasoningEffort": "high"})
        bodies = [r.body for r in kit.model_requests()]
    assert events[-1]["type"] == "RUN_FINISHED"
    if runner_type == "codex-sdk":
        assert bodies[-1]["reasoning"]["effort"] == "high"
    else:
        assert "high" in str(bodies[-1].get("output_config") or bodies[-1].get("thinking")), bodies[-1].keys()
