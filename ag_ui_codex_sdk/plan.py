"""Codex's plan / todo list (``turn/plan/updated``) as AG-UI state under its own key, ``plan``, beside the client's
own keys: the first update of a run adds ``/plan`` to the client's state with a ``STATE_DELTA`` (a ``STATE_SNAPSHOT``
only when the client sent no object state, so there is nothing of its own to keep), then ``STATE_DELTA`` JSON
Patches (RFC 6902) against the previous plan.

The plan's shape: ``{"explanation": str | None, "steps": [{"step": str, "status": str}, ...]}``.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from ag_ui.core import BaseEvent, StateDeltaEvent, StateSnapshotEvent

from ag_ui_cli_common.json_types import JsonObject, JsonValue

STEP_FIELDS: tuple[Literal["step", "status"], ...] = ("step", "status")


class PlanStep(TypedDict):
    step: str
    status: str


class Plan(TypedDict):
    explanation: JsonValue
    steps: list[PlanStep]


def plan_state(params: JsonObject) -> Plan:
    plan = params.get("plan")
    if not isinstance(plan, list):
        raise TypeError("turn/plan/updated without a plan list")
    steps: list[PlanStep] = [{"step": str(s.get("step", "")), "status": str(s.get("status", "pending"))}
                             for s in plan if isinstance(s, dict)]
    return {"explanation": params.get("explanation"), "steps": steps}


def plan_patch(old: Plan, new: Plan) -> list[dict[str, object]]:
    """A JSON Patch turning plan ``old`` into plan ``new`` (both ``plan_state`` shapes)."""
    ops: list[dict[str, object]] = []
    if old["explanation"] != new["explanation"]:
        ops.append({"op": "replace", "path": "/plan/explanation", "value": new["explanation"]})
    old_steps, new_steps = old["steps"], new["steps"]
    for index, step in enumerate(new_steps[: len(old_steps)]):
        for key in STEP_FIELDS:
            if old_steps[index][key] != step[key]:
                ops.append({"op": "replace", "path": f"/plan/steps/{index}/{key}", "value": step[key]})
    for index in range(len(old_steps), len(new_steps)):
        ops.append({"op": "add", "path": f"/plan/steps/{index}", "value": new_steps[index]})
    for index in range(len(old_steps) - 1, len(new_steps) - 1, -1):
        ops.append({"op": "remove", "path": f"/plan/steps/{index}"})
    return ops


class PlanTracker:
    def __init__(self, client_state: object = None) -> None:
        self._plan: Plan | None = None
        self._client_has_object_state = isinstance(client_state, dict)

    def update(self, params: JsonObject) -> list[BaseEvent]:
        new = plan_state(params)
        old, self._plan = self._plan, new
        if old is None:
            if self._client_has_object_state:  # "add" on an object member also replaces a plan of an earlier run
                return [_delta([{"op": "add", "path": "/plan", "value": new}])]
            return [StateSnapshotEvent(snapshot={"plan": new})]
        ops = plan_patch(old, new)
        return [_delta(ops)] if ops else []


def _delta(ops: list[dict[str, object]]) -> StateDeltaEvent:
    """The JSON Patch as AG-UI's typed operations (validated from the plain dicts)."""
    return StateDeltaEvent.model_validate({"delta": ops})
