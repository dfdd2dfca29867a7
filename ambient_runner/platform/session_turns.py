"""Turns the runner starts itself: the session's first turn and the greeting of a workflow that was just selected.

The first turn is ``INITIAL_PROMPT``, preceded by the active workflow's ``startupPrompt``, once per session (never
with ``IS_RESUME=true``, nor again in a replaced pod: a marker in the state dir). A workflow selected at run time
sends its ``startupPrompt`` as a turn of its own. Each is a hidden user message; on the platform
(``BACKEND_API_URL``) its backend runs it (``first_turn.post_first_turn``), elsewhere the runner starts it on the
session's thread itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from ag_ui.core import RunAgentInput, UserMessage

from ambient_runner.platform.first_turn import first_turn_url, hidden_metadata, post_first_turn
from ambient_runner.runs.busy import WhenBusy, accepted
from ambient_runner.runs.manager import RunManager
from ambient_runner.runs.request import QueuedMessage, RunRequest
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace.workflows import Workflows

log = logging.getLogger(__name__)
INITIAL_PROMPT_MARKER = ".ambient-initial-prompt-started"


class SessionTurns:
    def __init__(self, settings: RunnerSettings, runs: RunManager, workflows: Workflows) -> None:
        self.settings = settings
        self.runs = runs
        self.workflows = workflows
        self._tasks: set[asyncio.Task[None]] = set()

    async def first_turn(self) -> None:
        prompt = "\n\n".join(p for p in (self.workflows.prompt("startupPrompt"),
                                        self.settings.initial_prompt.strip()) if p)
        marker = self.settings.state_dir / INITIAL_PROMPT_MARKER
        if not prompt or marker.exists() or self.settings.resuming:
            return
        await self.start(prompt, "runner_initial_prompt", on_started=lambda: marker.write_text("started"))

    async def workflow_changed(self) -> None:
        """The greeting of a workflow selected at run time, in the background: ``POST /workflow`` answers at once
        (the operator's call times out after 10 s), and a thread that is busy then gets it once it is free."""
        prompt = self.workflows.prompt("startupPrompt")
        if not prompt:
            return

        async def greet() -> None:
            try:
                await self.start(prompt, "workflow_startup_prompt")
            except Exception as exc:  # noqa: BLE001 - a greeting that cannot start is only logged
                log.warning("the workflow's startupPrompt was not sent: %s", exc)

        self._keep(asyncio.create_task(greet(), name="workflow-greeting"))

    def _keep(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def start(self, prompt: str, source: str, on_started: Callable[[], object] | None = None) -> None:
        """Start a hidden turn on the session's thread (through the backend on the platform)."""
        url = first_turn_url(self.settings)
        if url is not None:
            async def through_the_backend() -> None:
                if await post_first_turn(self.settings, url, prompt, source) and on_started is not None:
                    on_started()

            self._keep(asyncio.create_task(through_the_backend(), name=f"session-turn-{source}"))
            return
        message = UserMessage(id=f"{source}-{uuid.uuid4()}", role="user", content=prompt,
                              metadata=hidden_metadata(source))
        run_input = RunAgentInput(thread_id=self.settings.session_id, run_id=f"{source}-{uuid.uuid4()}",
                                  messages=[message], state=None, tools=[], context=[], forwarded_props=None)
        bridge = self.runs.bridge
        assert bridge is not None, "session turns start once the bridge is loaded"
        options = bridge.parse_options(None)
        request = RunRequest(run_input, prompt, options)
        state = self.runs.threads.get(run_input.thread_id)
        if state is not None and state.busy:  # after the live run and the messages already waiting, in order
            self.runs.enqueue(QueuedMessage(request, head=accepted(run_input, WhenBusy.QUEUE,
                                                                   position=len(state.queue) + 1)))
        else:
            await self.runs.start(request)
        if on_started is not None:
            on_started()
        log.info("started (or queued) the %s as run %s on thread %s", source, run_input.run_id,
                 self.settings.session_id)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
