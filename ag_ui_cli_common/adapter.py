"""The one adapter protocol, and the base class with its one transform loop.

A CLI adapter turns one turn of a CLI's native events (a stream-json line, an app-server notification, an SDK
message) into AG-UI events. Every adapter answers the same three verbs:

* ``feed(native)``   -> the AG-UI events for one native event (nothing once the terminal event is out);
  ``feed(line, dropped_bytes)`` for a line the runner's reader cut at its size limit;
* ``finish(exit)``   -> the native stream ended: what is still open, closed; with ``exit`` (how the CLI process
  ended) and no terminal event yet, also the ``RUN_ERROR`` saying so (``Failure`` of ``exit_failure``);
* ``terminal``       -> the terminal event (``RUN_FINISHED`` / ``RUN_ERROR``) once there is one, else ``None``.

``CliAdapter`` implements them around a ``BlockTracker`` (``self.blocks``). A subclass writes only its parsing
and one handler per native event kind::

    class MyAdapter(CliAdapter[str]):
        agent = "My CLI"                                # how messages name the CLI
        source = "my-cli"                               # RAW events' source

        def __init__(self, thread_id, run_id):
            super().__init__(thread_id, run_id)
            self.handlers = {"text": self._on_text, "done": self._on_done}

        def parse(self, native):                        # -> (kind, payload), or None to skip it
            data = json.loads(native)
            return data["type"], data

        def _on_text(self, data):
            return self.blocks.text(data["id"], data["delta"])

        def _on_done(self, data):
            return self.blocks.finish(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id))

A kind without a handler goes to ``on_unknown``; a handler that raises (a payload shape the adapter did not
expect) to ``on_malformed``; a cut line to ``on_truncated``: each keeps the native event as a ``RAW`` event by
default. A pydantic payload's fields the adapter does not know (``model_extra``) are kept on its first event as
``rawEvent.unknownFields``. Nothing raises on odd input.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, AsyncIterator, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from ag_ui.core import BaseEvent, RawEvent

from ag_ui_cli_common.blocks import BlockTracker
from ag_ui_cli_common.errors import Failure, exit_failure

log = logging.getLogger(__name__)
NativeT = TypeVar("NativeT")
NativeT_contra = TypeVar("NativeT_contra", contravariant=True)
# A handler reads the payload of its own kind: the kind picks the payload's type, which one table cannot say (nor
# can ``on_unknown`` / ``on_malformed``, which get whatever the subclass's ``parse`` gave).
Handler = Callable[[Any], list[BaseEvent]]
RAW_PREVIEW_CHARS = 2000  # how much of a line a RAW event keeps when the line is cut or not understood


@dataclass(frozen=True)
class Exit:
    """How the CLI process ended: its exit code (negative: the signal that killed it; ``None``: not known, only
    its output ended) and the last lines of its stderr."""

    code: int | None
    stderr_tail: str = ""


class Adapter(Protocol[NativeT_contra]):
    """What a bridge uses of any adapter."""

    @property
    def terminal(self) -> BaseEvent | None: ...

    def feed(self, native: NativeT_contra) -> list[BaseEvent]: ...

    def finish(self, exit: Exit | None = None) -> list[BaseEvent]: ...


class CliAdapter(Generic[NativeT]):
    """One turn of one CLI: the transform loop; subclasses give ``parse``, ``handlers`` and their messages."""

    agent: ClassVar[str] = "The CLI"
    source: ClassVar[str] = "cli"
    result_suffix: ClassVar[str] = "-result"

    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.blocks = BlockTracker(result_suffix=self.result_suffix)
        self.handlers: dict[Hashable, Handler] = {}

    # ----- the protocol ----------------------------------------------------------------------------------
    @property
    def terminal(self) -> BaseEvent | None:
        return self.blocks.terminal

    def feed(self, native: NativeT, dropped_bytes: int = 0) -> list[BaseEvent]:
        """The AG-UI events for one native event; nothing after the terminal event. ``dropped_bytes`` > 0: the
        native event is a line the runner's reader cut at its size limit (``on_truncated``)."""
        if self.blocks.terminal is not None:
            return []
        if dropped_bytes:
            return self.on_truncated(native, dropped_bytes)
        parsed = self.parse(native)
        if parsed is None:
            return []
        kind, payload = parsed
        handler = self.handlers.get(kind)
        if handler is None:
            return self.on_unknown(kind, payload)
        try:
            events = handler(payload)
        except Exception:  # a payload shape the adapter did not expect: keep it, never crash the run
            log.warning("%s: a %r event was not understood; kept as RAW", self.source, kind, exc_info=True)
            return self.on_malformed(kind, payload)
        if events and type(payload) is not dict:  # a typed event's fields the adapter does not know: kept
            extra = getattr(payload, "__pydantic_extra__", None)  # on its first event (``model_extra``'s
            # attribute, read without the property call)
            if extra:
                events[0].raw_event = {"unknownFields": extra}
        return events

    def finish(self, exit: Exit | None = None) -> list[BaseEvent]:
        """The native stream ended: close what is open; with ``exit`` and no terminal event yet, fail the run
        with how the CLI ended (``exit_failure``, followed by its stderr tail)."""
        if self.blocks.terminal is not None:
            return []
        if exit is None:
            return self.blocks.close_all()
        return self.blocks.fail(self.exit_failure(exit.code).with_stderr(exit.stderr_tail))

    # ----- whole streams ---------------------------------------------------------------------------------
    def run(self, natives: Iterable[NativeT], exit: Exit | None = None) -> list[BaseEvent]:
        """All events of a recorded stream: ``feed`` each native event up to the terminal one, then ``finish``."""
        events: list[BaseEvent] = []
        for native in natives:
            events += self.feed(native)
            if self.blocks.terminal is not None:
                return events
        return events + self.finish(exit)

    async def stream(self, natives: AsyncIterable[NativeT]) -> AsyncIterator[BaseEvent]:
        """``run`` for a live stream (ends at the terminal event, else with ``finish()``)."""
        async for native in natives:
            for event in self.feed(native):
                yield event
            if self.blocks.terminal is not None:
                return
        for event in self.finish():
            yield event

    # ----- what a tool call's requester may ask ----------------------------------------------------------
    def has_started(self, tool_call_id: str) -> bool:
        return self.blocks.has_started(tool_call_id)

    def note_started(self, tool_call_id: str) -> None:
        """A tool call streamed by someone else (the runner, for a request the CLI had not streamed)."""
        self.blocks.note_started(tool_call_id)

    # ----- hooks -----------------------------------------------------------------------------------------
    def parse(self, native: NativeT) -> tuple[Hashable, object] | None:
        """``(kind, payload)`` of a native event: ``handlers[kind](payload)`` translates it; ``None`` skips it."""
        raise NotImplementedError

    def on_unknown(self, kind: Hashable, payload: Any) -> list[BaseEvent]:
        """A kind with no handler: kept as RAW."""
        return [self.raw(payload)]

    def on_malformed(self, kind: Hashable, payload: Any) -> list[BaseEvent]:
        """A payload its handler could not read: kept as RAW."""
        return [self.raw(payload)]

    def on_truncated(self, head: NativeT, dropped_bytes: int) -> list[BaseEvent]:
        """A line cut at the reader's size limit (``head``: what was kept): kept as RAW."""
        return [self.raw(head[:RAW_PREVIEW_CHARS] if isinstance(head, str) else head, reason="line_too_long",
                         droppedBytes=dropped_bytes)]

    def exit_failure(self, exit_code: int | None) -> Failure:
        """The failure of a CLI that ended before its turn did (a subclass adds what its exit codes mean)."""
        return exit_failure(self.agent, exit_code)

    def raw(self, payload: object, **metadata: object) -> RawEvent:
        return RawEvent(event=payload, source=self.source, metadata=metadata or None)
