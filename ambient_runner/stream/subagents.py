"""The sub-agent segments of one run's stream (AG-UI 1.0's ``SUBAGENT_STARTED`` … ``SUBAGENT_FINISHED`` /
``SUBAGENT_ERROR``), as the ``StreamGuard`` keeps them: each segment opens once and ends once (an ended one never opens
again, AGUI601); the run's terminal event ends those still open (finished when the run succeeded, an error when it
did not, suspended when it waits for a person); a suspended one is announced again, with the start event it had, by
the next run that hears from it.
"""

from __future__ import annotations

from collections.abc import Callable

from ag_ui.core import (
    BaseEvent,
    EventType,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
)

from ag_ui_cli_common.errors import ErrorCode

SUBAGENT_TYPES = {EventType.SUBAGENT_STARTED, EventType.SUBAGENT_FINISHED, EventType.SUBAGENT_ERROR}


class SubagentSegments:
    def __init__(self, suspended: dict[str, SubagentStartedEvent]) -> None:
        self._suspended = suspended  # the thread's (``ThreadIds.suspended``), shared by its runs
        self._open: dict[str, None] = {}  # open segments (ordered)
        self._ended: set[str] = set()
        self._starts: dict[str, SubagentStartedEvent] = {}  # this run's segments, as announced

    def reopen(self, event: BaseEvent) -> list[BaseEvent]:
        """A suspended sub-agent goes on in this run: its segment is announced again before its first event."""
        if not self._suspended:  # almost always: nothing to look at (this runs for every event)
            return []
        run = getattr(event, "subagent_run_id", None)
        if run is None or event.type in SUBAGENT_TYPES or run in self._open or run not in self._suspended:
            return []
        start = self._suspended.pop(run)
        self._open[run] = None
        self._starts[run] = start
        return [start]

    def start(self, event: SubagentStartedEvent, wire_id: Callable[[str], str]) -> list[BaseEvent]:
        """A segment starts (once): its parent tool call named by its id on the wire (``wire_id``)."""
        if event.subagent_run_id in self._open or event.subagent_run_id in self._ended:
            return []
        self._open[event.subagent_run_id] = None
        parent = event.parent_tool_call_id
        start = event.model_copy(update={"parent_tool_call_id": wire_id(parent)}) if parent else event
        self._starts[event.subagent_run_id] = start
        return [start]

    def end(self, event: SubagentFinishedEvent | SubagentErrorEvent) -> list[BaseEvent]:
        if event.subagent_run_id not in self._open:  # unknown, or already ended
            return []
        del self._open[event.subagent_run_id]
        self._ended.add(event.subagent_run_id)
        return [event]

    def close(self, terminal: BaseEvent) -> list[BaseEvent]:
        """The ends of the segments still open when the run ends with ``terminal``."""
        out: list[BaseEvent] = []
        succeeded = isinstance(terminal, RunFinishedEvent) and getattr(terminal.outcome, "type", "success") == "success"
        suspended = terminal.outcome if isinstance(terminal, RunFinishedEvent) and isinstance(
            terminal.outcome, RunFinishedInterruptOutcome) else None
        cancelled = isinstance(terminal, RunFinishedEvent) and not succeeded and suspended is None
        for run in list(self._open):
            if suspended is not None:  # waits with the run: a later run continues the same invocation
                asked = [i.id for i in suspended.interrupts if i.subagent_run_id == run]
                out.append(SubagentFinishedEvent(subagent_run_id=run, outcome=SubagentFinishedSuspendedOutcome(
                    interrupt_ids=asked or None)))
                if run in self._starts:
                    self._suspended[run] = self._starts[run]
                continue
            out.append(SubagentFinishedEvent(subagent_run_id=run) if succeeded else SubagentErrorEvent(
                subagent_run_id=run, message="the run was cancelled before the sub-agent finished" if cancelled
                else "the run ended before the sub-agent finished",
                code=ErrorCode.CANCELLED if cancelled else ErrorCode.RUN_ENDED))
        self._ended.update(self._open)
        self._open.clear()
        return out
