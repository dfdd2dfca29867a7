"""Lines typed while a run streams: each is sent at once as a new message of the same thread (``POST /run``).

The runner steers it into the live turn where its CLI can, else queues it (``whenBusy``'s default). Its short stream
(``RUN_STARTED``, ``ambient:message_accepted``, and for a steered one ``RUN_FINISHED``) goes to the run on screen
(``Side`` items: printed with ``--json``, a note otherwise). A queued message's own run is shown after the runs before
it, in the order the lines were typed.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import threading
from typing import Any, TextIO

from ambient_runner.client.connection import ClientError, RunnerClient, Side, StreamItem, StreamReader, run_body

ACCEPTED = "ambient:message_accepted"
HEAD_WAIT = 30.0  # s a typed line's POST has to say how it was taken before the next run is shown


class TypedLine(StreamReader):
    """One typed line's ``POST /run``. Its head goes to ``deliver`` (the reader of the run on screen); a queued
    message's later events stay in its own ``items``, read once its run is shown."""

    def __init__(self, client: RunnerClient, thread_id: str, body: dict[str, Any],
                 deliver: Any) -> None:
        super().__init__(client, thread_id, body, 0)
        self.deliver = deliver  # callable(item): onto the queue of the run on screen
        self.mode: str | None = None  # "steered" | "queued" | "run" (the thread was free: a run of its own)
        self.decided = threading.Event()

    def put(self, item: StreamItem) -> None:
        if self.mode in (None, "steered"):
            self.deliver(Side(item))
            if self.mode is None and item.event.get("type") == "CUSTOM" and item.event.get("name") == ACCEPTED:
                value = item.event.get("value") or {}
                self.mode = str(value.get("mode"))
                self.deliver(_note(self.mode, value))
                self.decided.set()
            elif self.mode is None and item.event.get("type") != "RUN_STARTED":
                self.mode = "run"
                self.decided.set()
                self.items.put(item)
            return
        self.items.put(item)

    def run(self) -> None:
        try:
            self._read()
            self.items.put(None)
        except ClientError as exc:
            self.deliver(f"not sent: {exc}")
            self.mode = "failed"
            self.items.put(None)
        finally:
            self.decided.set()

    @property
    def shows_a_run(self) -> bool:
        """Its own run is to be shown next (queued, or started on a free thread)."""
        self.decided.wait(HEAD_WAIT)
        return self.mode in ("queued", "run")


def _note(mode: str, value: dict[str, Any]) -> str:
    if mode == "steered":
        return "↪ sent into the running turn"
    if mode == "queued":
        return f"↪ queued (#{value.get('position', '?')}): runs when the current run ends"
    return f"↪ accepted ({mode})"


class LineSender(threading.Thread):
    """Reads whole lines from ``stream`` (a terminal) while runs stream, and posts each as a ``TypedLine``."""

    def __init__(self, client: RunnerClient, thread_id: str, model: str | None, ask: bool,
                 stream: TextIO) -> None:
        super().__init__(daemon=True, name="typed-lines")
        self.client, self.thread_id, self.model, self.ask = client, thread_id, model, ask
        self.fd = stream.fileno()
        self.current: StreamReader | None = None  # the run on screen: notes go to its queue
        self.sent: queue.Queue[TypedLine] = queue.Queue()  # in the order they were typed
        self.paused = threading.Event()  # set while the terminal asks for an answer (input())
        self.stopped = threading.Event()
        self._buffer = b""

    def deliver(self, item: Any) -> None:
        current = self.current
        if current is not None:
            current.items.put(item)

    def run(self) -> None:
        while not self.stopped.is_set():
            if self.paused.is_set():
                self.stopped.wait(0.1)
                continue
            with contextlib.suppress(OSError, ValueError):
                ready, _, _ = select.select([self.fd], [], [], 0.1)
                if not ready:
                    continue
                chunk = os.read(self.fd, 4096)
                if not chunk:  # end of input: nothing more will be typed
                    return
                self._buffer += chunk
                *lines, self._buffer = self._buffer.split(b"\n")
                for line in lines:
                    self.send(line.decode(errors="replace").strip())

    def send(self, line: str) -> None:
        if not line:
            return
        typed = TypedLine(self.client, self.thread_id, run_body(self.thread_id, line, self.model, self.ask),
                          self.deliver)
        self.sent.put(typed)
        typed.start()

    def next_run(self) -> TypedLine | None:
        """The next typed line whose own run is to be shown (steered ones have been shown already)."""
        while True:
            try:
                typed = self.sent.get_nowait()
            except queue.Empty:
                return None
            if typed.shows_a_run:
                return typed


def interactive(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False
