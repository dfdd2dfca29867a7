"""A message for a thread whose run is streaming: steered into the live turn, queued behind it, or refused.

``forwardedProps.whenBusy`` chooses: ``steer`` (the default where the runner's CLI takes input mid-turn), ``queue``
(the default elsewhere) or ``reject`` (``409 THREAD_BUSY``). Every such POST answers an AG-UI run of its own:

* steered: ``RUN_STARTED``, ``CUSTOM ambient:message_accepted {messageId, mode: "steered", intoRunId}``,
  ``RUN_FINISHED``; the message's effect streams in the live run.
* queued: ``RUN_STARTED``, ``CUSTOM ambient:message_accepted {messageId, mode: "queued", position}`` at once, then,
  when the thread's earlier runs have ended, that run's own events under the POST's ``runId`` and its terminal event.

A queued message (``runs.request.QueuedMessage``) belongs to the runner, not to the connection that posted it: a
client that goes away does not cancel it (it runs; ``GET /events`` shows it).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    RunAgentInput,
    RunFinishedEvent,
    RunStartedEvent,
)

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ag_ui_cli_common.json_types import JsonValue

ACCEPTED = "ambient:message_accepted"
STEERED_INTO = "ambient:message_steered"  # in the live run: a message reached its turn
SHUTDOWN_QUEUED_MESSAGE = ("The runner is shutting down (its pod is being replaced or stopped), so this queued message "
                           "was not sent to the agent. Send it again; the conversation is kept.")
DROPPED_MESSAGE = "The run was interrupted with dropQueued, so this queued message was not sent to the agent."


class WhenBusy(enum.StrEnum):
    STEER = "steer"
    QUEUE = "queue"
    REJECT = "reject"


class WhenBusyError(RunnerError, ValueError):
    """``forwardedProps.whenBusy`` names no mode this runner has (a 422 ``INVALID_OPTION``)."""

    code = ErrorCode.INVALID_OPTION


def modes(can_steer: bool) -> list[WhenBusy]:
    """The modes a runner has, its default first."""
    return [WhenBusy.STEER, WhenBusy.QUEUE, WhenBusy.REJECT] if can_steer else [WhenBusy.QUEUE, WhenBusy.REJECT]


def when_busy(forwarded_props: Mapping[str, object] | None, can_steer: bool) -> WhenBusy:
    """The run's ``whenBusy``; absent means the runner's default, ``steer`` where the runner cannot is ``queue``."""
    raw = (forwarded_props or {}).get("whenBusy")
    if raw is None:
        return modes(can_steer)[0]
    if not isinstance(raw, str) or raw not in [m.value for m in WhenBusy]:  # a string of JSON, or no mode
        raise WhenBusyError(f"whenBusy must be one of {', '.join(m.value for m in WhenBusy)}, got {str(raw)[:40]!r}",
                            option="whenBusy")
    if raw == WhenBusy.STEER and not can_steer:  # this runner's CLI takes no input mid-turn: the message waits
        return WhenBusy.QUEUE
    return WhenBusy(raw)


def message_id(run_input: RunAgentInput) -> str:
    """The id of the run's new (last) user message."""
    users = [m.id for m in run_input.messages if m.role == "user"]
    return users[-1] if users else (run_input.messages[-1].id if run_input.messages else "")


def accepted(run_input: RunAgentInput, mode: str, **details: JsonValue) -> list[BaseEvent]:
    """The head of a busy POST's own run: ``RUN_STARTED`` and the accepted event."""
    return [RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id, protocol_version=PROTOCOL_VERSION),
            CustomEvent(name=ACCEPTED, value={"messageId": message_id(run_input), "mode": mode, **details})]


def steered(run_input: RunAgentInput, into_run_id: str) -> list[BaseEvent]:
    """The whole stream of a steering POST."""
    return [*accepted(run_input, "steered", intoRunId=into_run_id),
            RunFinishedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)]
