"""``POST /model {model}``: the platform's model switch; the thread's next turn uses it.

The platform's backend has already written the new model into the session; a non-200 here makes it revert that.
So: ``200`` once the default model is switched (a run's own ``forwardedProps.model`` still wins for that run),
``400 MODEL_REQUIRED`` for an empty model, ``422 RUN_ACTIVE`` while a run streams (the backend shows it), and
``422 INVALID_OPTION`` for a name no provider can call or a model the deployment does not offer
(``RUNNER_MODELS``). A real switch is announced to the between-run listeners as
``CUSTOM ambient:model_switched {previousModel, newModel}``.
"""

from __future__ import annotations

import logging

from ag_ui.core import CustomEvent, EventType
from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.api.errors import ApiError, ready_bridge
from ambient_runner.api.routing import Runs, Settings, body_rules, router
from ambient_runner.bridges.options import MAX_MODEL_CHARS

log = logging.getLogger(__name__)
routes = router()
BOOT_WAIT = 25.0  # below the backend's 30 s timeout for this call
MODEL_SWITCHED = "ambient:model_switched"


class ModelSwitch(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = Field(None, max_length=4 * MAX_MODEL_CHARS, description="the model of the next turns")


class ModelSwitched(BaseModel):
    model: str
    previousModel: str | None  # noqa: N815 - the wire's name


@routes.post("/model", summary="Switch the model of the next turns", response_model=ModelSwitched,
             responses={400: {"description": "MODEL_REQUIRED"}})
@body_rules(limit=64 * 1024)
async def switch_model(body: ModelSwitch, request: Request, runs: Runs, settings: Settings) -> ModelSwitched:
    """``200`` once the default model is switched; ``422 INVALID_OPTION`` for a name no provider can call or one the
    deployment does not offer, ``422 RUN_ACTIVE`` while a run streams."""
    model = body.model
    if not model or not model.strip():
        raise ApiError(400, ErrorCode.MODEL_REQUIRED, "model must not be empty")
    bridge = await ready_bridge(request, BOOT_WAIT)
    # the same check as a run's forwardedProps.model (its 422 INVALID_OPTION): nothing changes for a name the provider
    # cannot call
    model = bridge.parse_options({"model": model}).model or model.strip()
    active = runs.active_runs()
    if active:
        raise ApiError(422, ErrorCode.RUN_ACTIVE, "a run is in progress; switch the model once it has finished",
                       runIds=[run.run_id for run in active])
    offered = settings.model_list
    if offered and model not in offered:
        raise ApiError(422, ErrorCode.INVALID_OPTION, f"model {model!r} is not offered by this deployment; choose one "
                       f"of {', '.join(offered)}", option="model", models=offered)
    previous = bridge.capabilities().default_model or settings.runner_default_model
    settings.runner_default_model = model
    if model != previous:
        log.info("model switched from %s to %s for the next turns", previous, model)
        runs.publish_between_runs(CustomEvent(type=EventType.CUSTOM, name=MODEL_SWITCHED,
                                              value={"previousModel": previous, "newModel": model}))
    return ModelSwitched(model=model, previousModel=previous)
