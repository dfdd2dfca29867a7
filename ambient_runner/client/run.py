"""``ambient-runner run "prompt"``: talk to a runner from a terminal (locally or through ``kubectl port-forward``).

Posts an AG-UI ``RunAgentInput`` to ``POST /run`` and renders the SSE stream (``render.EventRenderer``), or with
``--json`` prints the raw events one per line for scripts. ``--resume-from N`` follows ``GET /events/{thread}``
after N instead of posting. A dropped connection is resumed from the last event id it saw. Ctrl-C sends
``POST /interrupt`` for the thread and then waits for the stream to end; a second Ctrl-C quits at once.

A run that ends waiting for a person (an approval, a question: ``--ask`` makes commands and file changes ask) is
answered at the terminal (``approve? [y/N]``, or the question's options) and resumed; ``--approve-all`` approves
everything for scripts.

Exit status: 0 finished, 1 the run ended with RUN_ERROR, 2 bad usage, 3 the runner could not be reached or refused
the request (connection refused, 401, 409, 422, ...), 4 the stream ended without a terminal event, 5 the run waits
for answers nobody here can give (no terminal, no --approve-all), 130 cancelled.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import uuid
from typing import Any

import typer
from rich.console import Console

from ambient_runner.client.answers import interrupts_of, resume_entries
from ambient_runner.client.connection import (
    ClientError,
    RunnerClient,
    Side,
    StreamReader,
    resume_body,
    run_body,
)
from ambient_runner.client.local import DEFAULT_PORT, LOCAL_HOST
from ambient_runner.client.render import TERMINAL_TYPES, EventRenderer
from ambient_runner.client.typing_ahead import LineSender, interactive

EXIT_OK, EXIT_RUN_ERROR, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_INCOMPLETE, EXIT_CANCELLED = 0, 1, 2, 3, 4, 130
EXIT_WAITING = 5  # the run waits for a person and nobody here can answer


class CtrlC:
    """Counts SIGINTs (in the main thread) instead of raising KeyboardInterrupt inside a lock or a write."""

    def __init__(self) -> None:
        self.count = 0
        self._previous: Any = None

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.count += 1


def consume(reader: StreamReader, client: RunnerClient, json_out: bool, renderer: EventRenderer | None,
            err: Console, ctrl_c: CtrlC) -> int:
    """Drain the reader's queue into the output; Ctrl-C interrupts the run once, then quits. The terminal event
    is left in ``reader.terminal``."""
    terminal: str | None = None
    handled = 0
    while True:
        if ctrl_c.count > handled:
            if handled:
                if renderer:
                    renderer.close()
                return EXIT_CANCELLED
            handled = ctrl_c.count = 1
            note = client.interrupt(reader.thread_id)
            (renderer.message(note) if renderer else err.print(note, style="yellow"))
        try:
            item = reader.items.get(timeout=0.1)
        except queue.Empty:
            continue
        if item is None:
            break
        if isinstance(item, ClientError):
            if renderer:
                renderer.close()
            err.print(f"error: {item}", style="bold red", highlight=False, soft_wrap=True)
            return EXIT_UNREACHABLE
        if isinstance(item, str):
            (renderer.message(item) if renderer else err.print(item, style="yellow"))
            continue
        if isinstance(item, Side):  # a typed line's own events: with --json they are shown as they come
            if json_out:
                sys.stdout.write(item.item.data + "\n")
                sys.stdout.flush()
            continue
        if json_out:
            sys.stdout.write(item.data + "\n")
            sys.stdout.flush()
        elif renderer:
            renderer.handle(item.event)
        if item.event.get("type") in TERMINAL_TYPES:
            terminal = _outcome(item.event)
            reader.terminal = item.event
    if renderer:
        renderer.close()
    if terminal is None:
        if reader.body is None:  # following a thread with no live run: the replay is complete
            return EXIT_OK
        err.print("error: the stream ended without a terminal event", style="bold red")
        return EXIT_INCOMPLETE
    return {"error": EXIT_RUN_ERROR, "cancelled": EXIT_CANCELLED}.get(terminal, EXIT_OK)


def _outcome(event: dict[str, Any]) -> str:
    if event.get("type") == "RUN_ERROR":
        return "error"
    outcome = event.get("outcome")
    return "cancelled" if isinstance(outcome, dict) and outcome.get("type") == "cancelled" else "success"


def run_command(
    prompt: str | None = typer.Argument(None, help="The message to send (not needed with --resume-from)."),
    url: str | None = typer.Option(None, envvar="AMBIENT_RUNNER_URL", show_default=False,
                                   help="The runner's base URL (default: http://127.0.0.1:$AGUI_PORT, port 8001 "
                                        "when AGUI_PORT is not set, where `make run` serves)."),
    thread: str | None = typer.Option(None, help="Thread id; a new one when not given (continue a conversation "
                                                  "by passing the same id)."),
    token: str | None = typer.Option(None, envvar="AGUI_TOKEN", help="The runner's AGUI_TOKEN, if it has one."),
    model: str | None = typer.Option(None, help="Model for this run (forwardedProps.model)."),
    json_out: bool = typer.Option(False, "--json", help="Print the raw AG-UI events, one JSON per line."),
    resume_from: int | None = typer.Option(None, "--resume-from", min=0, help="Follow GET /events/{thread} "
                                           "after event N instead of posting (needs --thread)."),
    ask: bool = typer.Option(False, "--ask", help="Commands and file changes wait for your approval "
                                                   "(forwardedProps.approvalPolicy=ask)."),
    approve_all: bool = typer.Option(False, "--approve-all", help="Approve every request and take the first "
                                                                  "option of every question (for scripts)."),
) -> None:
    """Send a prompt to a runner and show the agent's work as it streams."""
    err = Console(stderr=True, highlight=False)
    if resume_from is not None and not thread:
        err.print("error: --resume-from needs --thread", style="bold red")
        raise typer.Exit(EXIT_USAGE)
    if resume_from is None and not (prompt and prompt.strip()):
        err.print("error: give a prompt, e.g. ambient-runner run \"fix the failing test\"", style="bold red")
        raise typer.Exit(EXIT_USAGE)
    thread_id = thread or f"cli-{uuid.uuid4()}"
    client = RunnerClient(url or local_url(), token)
    body = run_body(thread_id, prompt or "", model, ask) if resume_from is None else None
    # A line typed while a run streams is sent to the thread at once (steered into the turn, or queued).
    sender = LineSender(client, thread_id, model, ask, sys.stdin) if interactive(sys.stdin) else None
    if not json_out:
        err.print(f"thread {thread_id}" + (" (type a line to send it while the agent works)" if sender else ""),
                  style="dim")
    next_run: StreamReader | None = None
    try:
        if sender is not None:
            sender.start()
        while True:
            renderer = None if json_out else EventRenderer(Console(highlight=False))
            reader = next_run or StreamReader(client, thread_id, body, resume_from or 0)
            if sender is not None:
                sender.current = reader
            try:
                with CtrlC() as ctrl_c:
                    if next_run is None:
                        reader.start()
                    code = consume(reader, client, json_out, renderer, err, ctrl_c)
            finally:
                if renderer:
                    renderer.close()
            next_run = None
            waiting = interrupts_of(reader.terminal) if code == EXIT_OK else []
            if not waiting:
                next_run = sender.next_run() if sender is not None and code != EXIT_CANCELLED else None
                if next_run is None:
                    break
                continue
            if not (approve_all or sys.stdin.isatty()):
                err.print("the run waits for answers; run again with --approve-all, or answer from a terminal",
                          style="yellow")
                code = EXIT_WAITING
                break
            if sender is not None:
                sender.paused.set()  # the terminal's next line is the answer
            try:
                entries = resume_entries(waiting, approve_all=approve_all, ask=lambda text: input(text), out=err)
            finally:
                if sender is not None:
                    sender.paused.clear()
            body, resume_from = resume_body(thread_id, entries, model, ask), None
    finally:
        if sender is not None:
            sender.stopped.set()
        client.close()
    raise typer.Exit(code)


def local_url() -> str:
    """Where ``ambient-runner serve`` (``make run``) listens: 127.0.0.1 on AGUI_PORT."""
    return f"http://{LOCAL_HOST}:{os.environ.get('AGUI_PORT') or DEFAULT_PORT}"


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
