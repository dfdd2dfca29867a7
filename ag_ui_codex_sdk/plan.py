"""Codex's plan / todo list (``turn/plan/updated``) as AG-UI state: a ``STATE_SNAPSHOT`` the first time,
then ``STATE_DELTA`` JSON Patches (RFC 6902) against the previous plan.

State shape: ``{"plan": {"explanation": str | None, "steps": [{"step": str, "status": str}, ...]}}``.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import BaseEvent, StateDeltaEvent, StateSnapshotEvent


def plan_state(params: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(params.get("plan"), list):
        raise TypeError("turn/plan/updated without a plan list")
    steps = [{"step": str(s.get("step", "")), "status": str(s.get("status", "pending"))}
             for s in params.get("plan") or [] if isinstance(s, dict)]
    return {"explanation": params.get("explanation"), "steps": steps}


def plan_patch(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON Patch turning plan ``old`` into plan ``new`` (both ``plan_state`` shapes)."""
    ops: list[dict[str, Any]] = []
    if old.get("explanation") != new.get("explanation"):
        ops.append({"op": "replace", "path": "/plan/explanation", "value": new.get("explanation")})
    old_steps, new_steps = old["steps"], new["steps"]
    for index, step in enumerate(new_steps[: len(old_steps)]):
        for key in ("step", "status"):
            if old_steps[index].get(key) != step[key]:
                ops.append({"op": "replace", "path": f"/plan/steps/{index}/{key}", "value": step[key]})
    for index in range(len(old_steps), len(new_steps)):
        ops.append({"op": "add", "path": f"/plan/steps/{index}", "value": new_steps[index]})
    for index in range(len(old_steps) - 1, len(new_steps) - 1, -1):
        ops.append({"op": "remove", "path": f"/plan/steps/{index}"})
    return ops


class PlanTracker:
    def __init__(self) -> None:
        self._plan: dict[str, Any] | None = None

    def update(self, params: dict[str, Any]) -> list[BaseEvent]:
        new = plan_state(params)
        old, self._plan = self._plan, new
        if old is None:
            return [StateSnapshotEvent(snapshot={"plan": new})]
        ops = plan_patch(old, new)
        return [StateDeltaEvent(delta=ops)] if ops else []
