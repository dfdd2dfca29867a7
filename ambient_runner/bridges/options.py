"""Run options: parsed from ``forwardedProps`` the same way for every runner, from one declaration per runner.

Recognised options (camelCase; ``reasoning_effort`` is accepted for ``reasoningEffort``):

* ``model``: a model name; when the deployment lists its models (``RUNNER_MODELS``) it must be one of them.
  Default: ``RUNNER_DEFAULT_MODEL``, else the runner's own default.
* ``mode``: ``default`` or ``plan`` (read-only planning: the agent may read and think but not change files or
  run commands that do). Default: ``RUNNER_DEFAULT_MODE``.
* ``reasoningEffort``: the runner's own levels; refused by a runner whose CLI has no such setting.
* ``approvalPolicy``: ``auto`` (nothing asks) or ``ask`` (what changes things waits for a person's approval, as an
  AG-UI interrupt); refused by a runner that cannot ask yet. Default: ``RUNNER_APPROVAL_POLICY``.

A recognised option with a value this runner cannot take is refused (``OptionError`` -> 422 ``INVALID_OPTION``
naming it), never silently ignored. Every other prop is left alone (clients forward their own).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ambient_runner.bridges.contract import MODEL_SEPARATORS, OptionError, OptionSpec, RunOptions, check_model_name
from ambient_runner.settings import RunnerSettings

MODES = ("default", "plan")
APPROVAL_POLICIES = ("auto", "ask")
EFFORT_KEYS = ("reasoningEffort", "reasoning_effort")


@dataclass(frozen=True)
class RunnerOptions:
    """What one runner accepts. ``efforts=None``: its CLI has no reasoning-effort setting."""

    runner: str  # shown in messages, e.g. "the Gemini CLI runner"
    default_model: str | None = None  # the CLI's own default when the deployment names none
    default_models: tuple[str, ...] = ()  # offered when RUNNER_MODELS is empty
    efforts: tuple[str, ...] | None = None
    approvals: bool = False  # its bridge turns the CLI's approval requests into interrupts
    model_separators: str = MODEL_SEPARATORS  # what may join letters and digits in its provider's model ids
    mode_note: str = "plan = read-only planning mode"
    effort_note: str = "reasoning effort"

    # ----- models ----------------------------------------------------------------------------------------
    def model_default(self, settings: RunnerSettings) -> str | None:
        return settings.runner_default_model or self.default_model

    def models(self, settings: RunnerSettings) -> list[str]:
        models = settings.model_list or list(self.default_models)
        default = self.model_default(settings)
        if default and not settings.model_list and default not in models:
            models.insert(0, default)
        return models

    # ----- parsing ---------------------------------------------------------------------------------------
    def parse(self, props: Mapping[str, Any] | None, settings: RunnerSettings) -> RunOptions:
        props = props if isinstance(props, Mapping) else {}
        model = self._model(props.get("model"), settings)
        mode = self._mode(props.get("mode"), settings)
        effort = self._effort(props)
        named = props.get("approvalPolicy", props.get("approval_policy"))
        policy = self._approval_policy(named, settings)
        return RunOptions(model=model, mode=mode, reasoning_effort=effort, approval_policy=policy,
                          approval_policy_named=named is not None)

    def _model(self, value: Any, settings: RunnerSettings) -> str | None:
        if value is None:
            return None
        value = check_model_name(value, self.model_separators)
        offered = settings.model_list
        if offered and value not in offered:
            raise OptionError("model", f"model {value!r} is not offered by this deployment; choose one of "
                                       f"{', '.join(offered)}")
        return value

    def _mode(self, value: Any, settings: RunnerSettings) -> str | None:
        if value is None:
            value = settings.runner_default_mode
        if value not in MODES:
            raise OptionError("mode", f"mode must be one of {', '.join(MODES)} (got {value!r})")
        return "plan" if value == "plan" else None

    def _approval_policy(self, value: Any, settings: RunnerSettings) -> str:
        named = value is not None
        value = settings.runner_approval_policy if value is None else value
        if value not in APPROVAL_POLICIES:
            raise OptionError("approvalPolicy", f"approvalPolicy must be one of {', '.join(APPROVAL_POLICIES)} "
                                                f"(got {value!r})")
        if value == "ask" and not self.approvals:
            where = "" if named else " (RUNNER_APPROVAL_POLICY=ask)"
            raise OptionError("approvalPolicy", f"{self.runner} cannot ask for approvals yet{where}; use 'auto'")
        return str(value)

    def _effort(self, props: Mapping[str, Any]) -> str | None:
        key = next((k for k in EFFORT_KEYS if props.get(k) is not None), None)
        if key is None:
            return None
        value = props[key]
        if self.efforts is None:
            raise OptionError("reasoningEffort", f"reasoningEffort is not supported by {self.runner} "
                                                 "(its CLI has no reasoning-effort setting)")
        if value not in self.efforts:
            raise OptionError("reasoningEffort",
                              f"reasoningEffort must be one of {', '.join(self.efforts)} (got {value!r})")
        return str(value)

    # ----- description -----------------------------------------------------------------------------------
    def specs(self, settings: RunnerSettings) -> list[OptionSpec]:
        models = settings.model_list or None
        specs = [
            OptionSpec(name="model", description="the model of this run" + (
                "" if models else " (any model name the CLI accepts)"), values=models),
            OptionSpec(name="mode", description=self.mode_note, values=list(MODES)),
            OptionSpec(name="approvalPolicy", description="ask = shell commands, file changes and MCP tools wait "
                       "for a person (an interrupt); auto = nothing asks", values=list(
                           APPROVAL_POLICIES if self.approvals else ("auto",))),
        ]
        if self.efforts is not None:
            specs.append(OptionSpec(name="reasoningEffort", description=self.effort_note,
                                    values=list(self.efforts)))
        return specs
