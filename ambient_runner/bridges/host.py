"""What the core lends a bridge (``BridgeHost``), given at its construction (``bridges.registry.create_bridge``):
the run manager owns it and shares it with the bridge; a bridge built on its own (a test's) has a detached one, which
the run manager then takes as its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from ag_ui.core import BaseEvent

from ambient_runner.bridges.tasks import TASK_END_GRACE, TaskRegistry, TaskReport, TaskStopper
from ambient_runner.interrupts.human_in_the_loop import HumanInTheLoop
from ambient_runner.settings import RunnerSettings


@dataclass
class BridgeHost:
    """What the core lends a bridge, given at its construction: a person's turn, the task registry, a way to send an
    event outside any run (the run manager's between-run channel), and timers that end with the runner."""

    hitl: HumanInTheLoop = field(default_factory=HumanInTheLoop)
    tasks: TaskRegistry = field(default_factory=TaskRegistry)
    publish: Callable[[BaseEvent], None] = lambda event: None
    _timers: set[asyncio.TimerHandle] = field(default_factory=set)

    @classmethod
    def of(cls, settings: RunnerSettings) -> BridgeHost:
        """The runner's: its person's turn kept in the state dir (``HumanInTheLoop.of``)."""
        return cls(HumanInTheLoop.of(settings))

    def later(self, delay: float, call: Callable[[], None]) -> None:
        def fire() -> None:
            self._timers.discard(handle)
            call()

        handle = asyncio.get_running_loop().call_later(delay, fire)
        self._timers.add(handle)

    def task_event(self, thread_id: str, report: TaskReport, stop: TaskStopper | None = None) -> BaseEvent | None:
        """A CLI's task report into the registry (``stop``: how the CLI stops a task it started); the event to send
        when it changed something."""
        tasks = self.tasks
        if report.kind == "started":
            return tasks.started(thread_id, report.task_id, report.description, report.task_type, stop)
        if report.kind == "progress":
            return tasks.progress(report.task_id, report.usage, report.last_tool_name)
        if not report.summary and not report.output_file:
            # A bare status change: the CLI's full notification (summary, output file) usually follows at once;
            # the end is announced from this one only if that does not come.
            def announce() -> None:
                late = tasks.completed(report.task_id, report.status)
                if late is not None:
                    self.publish(late)

            self.later(TASK_END_GRACE, announce)
            return None
        return tasks.completed(report.task_id, report.status, report.summary, report.usage, report.output_file)

    def close(self) -> None:
        """Runner shutdown: a paused turn stops waiting (the file keeps the pause for the next runner), the timers
        end."""
        self.hitl.close()
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
