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

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.settings import RunnerSettings


class OptionError(RunnerError, ValueError):
    """A run option (``forwardedProps``) that this runner recognises but cannot honour. Becomes a 422 naming it."""

    code = ErrorCode.INVALID_OPTION

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message, option=option)
        self.option = option

    def __str__(self) -> str:
        return f"{self.option}: {self.message}"


MAX_MODEL_CHARS = 200
MODEL_SEPARATORS = "._-/@:"  # '/' for gateway names, '@' for Vertex ids, ':' for Bedrock and fine-tuned ids


def check_model_name(value: Any, separators: str = MODEL_SEPARATORS) -> str:
    """``value`` stripped, when it is a name a provider can call: letters and digits joined by ``separators``; no
    ``.``/``..`` segment, no whitespace, control, bidi, ``?`` or ``#``; at most ``MAX_MODEL_CHARS``. Else
    ``OptionError`` (422 ``INVALID_OPTION``)."""
    if not isinstance(value, str) or not value.strip():
        raise OptionError("model", "model must be a non-empty string")
    name = value.strip()
    if len(name) > MAX_MODEL_CHARS:
        raise OptionError("model", f"model is longer than {MAX_MODEL_CHARS} characters")
    allowed = set(separators)
    if not (name.isascii() and name[0].isalnum() and name[-1].isalnum()
            and all(ch.isalnum() or ch in allowed for ch in name)) or {".", ".."} & set(name.split("/")):
        shown = ascii(name[:80])
        raise OptionError("model", f"model {shown} is not a model name: use letters and digits joined by "
                                   f"{' '.join(repr(c) for c in separators)}")
    return name


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class OptionSpec(CamelModel):
    """One run option a runner accepts in ``forwardedProps`` (listed by ``/capabilities``)."""

    name: str
    description: str
    values: list[str] | None = None


class RunOptions(CamelModel):
    """Run options common to all runners, parsed from ``forwardedProps`` by ``Bridge.parse_options``."""

    model: str | None = None
    mode: str | None = None  # "plan" = read-only planning mode
    reasoning_effort: str | None = None
    approval_policy: str = "auto"  # "ask": tools that change things wait for a person (an interrupt)
    approval_policy_named: bool = False  # by the run itself (else the deployment's default)
    extra: dict[str, Any] = Field(default_factory=dict)


def model_only(forwarded_props: Mapping[str, Any] | None) -> RunOptions:
    """The run options of a runner that takes a model and nothing else."""
    model = dict(forwarded_props or {}).get("model")
    return RunOptions(model=None if model is None else check_model_name(model))


MODES = ("default", "plan")
APPROVAL_POLICIES = ("auto", "ask")
EFFORT_KEYS = ("reasoningEffort", "reasoning_effort")


APPROVAL_NOTE = "ask = shell commands, file changes and MCP tools wait for a person (an interrupt); auto = nothing asks"


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
    approval_note: str = APPROVAL_NOTE  # what ``ask`` makes wait (a CLI that asks for less says so)

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
            OptionSpec(name="approvalPolicy", description=self.approval_note, values=list(
                           APPROVAL_POLICIES if self.approvals else ("auto",))),
        ]
        if self.efforts is not None:
            specs.append(OptionSpec(name="reasoningEffort", description=self.effort_note,
                                    values=list(self.efforts)))
        return specs
