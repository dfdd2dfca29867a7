"""A thread's conversation as the runner knows it, for the ``MESSAGES_SNAPSHOT`` before every terminal event.

Built once, in the core, for every runner: the messages each run's input brought (user messages with their
``metadata``, and whatever history a client sent that the runner has not seen), then what the run itself streamed:
assistant text, reasoning (``role: "reasoning"``), assistant messages holding tool calls, and tool results, each under
the id it was streamed with. The platform keeps only snapshots when it compacts a run, and a client replaces its
messages with a snapshot, so the snapshot always holds the whole thread. It is bounded (``SNAPSHOT_LIMIT``): long
contents are cut, messages are never dropped.

It rebuilds what the platform's page built from the stream (its reducer, ``hooks/agui/event-handlers.ts``): a text or
reasoning message joins at its end and only with content; a tool call is held by the message its
``parentMessageId`` names (the ``StreamGuard`` gives every call one), from its ``TOOL_CALL_END`` on. A holder that is
not a text (a call with nothing said before it) joins, empty, where the stream announced it (a RAW event of
``HOLDER_SOURCE``, which the page makes the same empty assistant message of); one never announced (a stream that did
not pass the guard) where the page would put it, at its call's end.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection

from ag_ui.core import (
    BaseEvent,
    EventType,
    Message,
    MessagesSnapshotEvent,
    RawEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    RunAgentInput,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ag_ui_cli_common.json_types import JsonObject, JsonValue, iterable_or_empty, object_or_empty
from ambient_runner.stream.encoding import Redactor
from ambient_runner.stream.guard import HOLDER_SOURCE

SNAPSHOT_LIMIT = 8 * 1024 * 1024 - 64 * 1024  # the platform skips SSE lines over 8 MiB; room for the envelope
CUT_TO = 16 * 1024
CUT_NOTE = "\n[... {n} characters cut from this snapshot; the full text was streamed in its run ...]"


class Conversation:
    def __init__(self) -> None:
        self._messages: list[JsonObject] = []
        self._by_id: dict[str, JsonObject] = {}
        # Streamed messages not joined yet: text and reasoning until their end (with content), tool-call holders until
        # the end of a call they hold. A tool call may be held by one of them.
        self._opening: dict[str, JsonObject] = {}
        self._calls: dict[str, JsonObject] = {}  # toolCallId -> its entry in an assistant message
        self._holders: dict[str, str] = {}  # toolCallId (not ended yet) -> the id of the message that will hold it
        # Streamed pieces, joined when a snapshot is taken (a run can stream 100,000 deltas into one message).
        self._text: dict[str, list[str]] = {}  # messageId -> content deltas
        self._args: dict[str, list[str]] = {}  # toolCallId -> argument deltas
        # A sub-agent's calls that have no result yet: shown (marked with their subagentRunId) only in the snapshots
        # around a pause, so a client joining a resumed run knows the call whose result follows.
        self._subagent_calls: dict[str, tuple[JsonObject, str]] = {}  # toolCallId -> (call, subagentRunId)
        # Each joined message (by its position) as the last snapshot validated it, with its JSON size, and its wire
        # JSON as the last snapshot wrote and redacted it, until it changes (``_touch``): a snapshot validates,
        # measures, writes and redacts only what is new or changed, not the whole thread again (500 turns: ~20x).
        self._position: dict[str, int] = {}
        self._models: list[Message | None] = []  # None: not validated yet
        self._sizes: list[int] = []
        self._size = 0  # the sum of ``_sizes``
        self._changed: set[int] = set()  # positions to validate (and write) again
        self._raw: list[str | None] = []  # wire JSON (None: to write again)
        self._parts: list[str | None] = []  # ``_raw`` redacted (None: to redact again, or only in the whole)
        self._unredacted: set[int] = set()  # positions whose part is to redact again
        self._whole_only: set[int] = set()  # positions whose part only the whole snapshot's redaction is exact for
        self._parts_generation: object = None  # the redactor's generation that redacted ``_parts``
        self._owners: dict[str, str] = {}  # toolCallId -> the id of the message that holds (or will hold) it

    # ----- input -------------------------------------------------------------------------------------------
    def add_input(self, run_input: RunAgentInput, skip: Collection[str] = ()) -> None:
        """The run's messages the conversation does not have yet (by id), in the order the client sent them;
        ``skip``: ids of messages that are no part of it (a tool message that answered an interrupt)."""
        for message in run_input.messages:
            if message.id in self._by_id or message.id in skip:
                continue
            data: JsonObject = message.model_dump(mode="json", by_alias=True, exclude_none=True)
            self._append(data)
            for item in iterable_or_empty(data.get("toolCalls")):
                call = object_or_empty(item)
                self._calls[_id(call)] = call
                self._owners[_id(call)] = _id(data)

    def message_ids(self) -> Collection[str]:
        return self._by_id.keys()

    # ----- the run's events --------------------------------------------------------------------------------
    def add_event(self, event: BaseEvent) -> None:
        run = getattr(event, "subagent_run_id", None)  # an extra field the Claude adapter sets
        if run is not None:
            self._feed_subagent(event, str(run))  # its result reaches the conversation as its parent call's result
            return
        if isinstance(event, TextMessageStartEvent):
            self._open(event.message_id, "assistant")
        elif isinstance(event, TextMessageContentEvent | ReasoningMessageContentEvent):
            if event.message_id not in self._by_id:
                self._open(event.message_id,
                           "assistant" if isinstance(event, TextMessageContentEvent) else "reasoning")
            self._text.setdefault(event.message_id, []).append(event.delta)
            self._touch(event.message_id)
        elif isinstance(event, ReasoningMessageStartEvent):
            self._open(event.message_id, "reasoning")
        elif isinstance(event, TextMessageEndEvent | ReasoningMessageEndEvent):
            if self._text.get(event.message_id):
                self._join(event.message_id)
        elif isinstance(event, ToolCallStartEvent):
            owner_id = event.parent_message_id or self._last_assistant_id() or f"{event.tool_call_id}-call"
            self._open(owner_id, "assistant")
            self._calls[event.tool_call_id] = {"id": event.tool_call_id, "type": "function",
                                               "function": {"name": event.tool_call_name, "arguments": ""}}
            self._holders[event.tool_call_id] = self._owners[event.tool_call_id] = owner_id
        elif isinstance(event, ToolCallArgsEvent):
            if event.tool_call_id in self._calls:
                self._args.setdefault(event.tool_call_id, []).append(event.delta)
                self._touch(self._owners.get(event.tool_call_id, ""))
        elif isinstance(event, ToolCallEndEvent):  # held from its end on, as the page holds it
            holder = self._holders.pop(event.tool_call_id, None)
            owner = self._by_id.get(holder or "") or self._opening.get(holder or "")
            if owner is not None:
                _tool_calls(owner).append(self._calls[event.tool_call_id])
                self._touch(_id(owner))
                if holder in self._opening and owner["role"] == "assistant":
                    self._join(holder)
        elif isinstance(event, ToolCallResultEvent):
            if event.message_id not in self._by_id:
                self._append({"id": event.message_id, "role": "tool", "content": _result_content(event),
                              "toolCallId": event.tool_call_id})
        elif isinstance(event, RawEvent) and event.source == HOLDER_SOURCE:  # the page has the holder from here on
            holder = str(event.event.get("id", "")) if isinstance(event.event, dict) else ""
            if holder and holder not in self._by_id:
                self._opening.pop(holder, None)
                self._append({"id": holder, "role": "assistant"})

    def snapshot_json(self, redactor: Redactor, *, waiting: bool = False) -> str:
        """``snapshot()``'s wire JSON (what ``event_json`` writes) redacted by ``redactor``: a join of each message's
        part, written and redacted once and kept while the message and the redactor's secrets stay the same. A long
        thread's snapshot is a join, not an encoding and a scan of the whole thread each run."""
        extra = self._extra(waiting)
        extra_models = self._validate(extra)
        if self._too_big(extra) or not _EMPTY.endswith('"messages":[]}'):
            return redactor(_wire(self._cut_to_fit(extra, redactor)))
        if redactor.generation is not self._parts_generation:  # its secrets changed: every part is redacted again
            self._unredacted = set(range(len(self._messages)))
            self._parts_generation = redactor.generation
        for position in self._unredacted:
            raw = self._raw[position]
            if raw is None:
                model = _known(self._models[position])
                raw = self._raw[position] = model.model_dump_json(by_alias=True, exclude_none=True)
            part = self._parts[position] = redactor.item(raw)
            if part is None:
                self._whole_only.add(position)
            else:
                self._whole_only.discard(position)
        self._unredacted.clear()
        extra_raw = [m.model_dump_json(by_alias=True, exclude_none=True) for m in extra_models]
        extra_parts = [redactor.item(raw) for raw in extra_raw]
        if self._whole_only or None in extra_parts:  # a match may span two parts: the whole join, redacted once
            return redactor(f"{_EMPTY[:-2]}{','.join([*self._raw, *extra_raw])}]}}")  # type: ignore[list-item]
        joined = ",".join([*self._parts, *extra_parts])  # type: ignore[list-item]  # every part redacted above
        return f"{redactor(_EMPTY[:-2])}{joined}]}}"

    def snapshot(self, *, waiting: bool = False) -> MessagesSnapshotEvent:
        """The whole conversation; ``waiting``: with the sub-agents' calls that wait for their result (a pause).
        Without it, those calls are forgotten (the run that made them is over)."""
        extra = self._extra(waiting)
        extra_models = self._validate(extra)
        if self._too_big(extra):
            return self._cut_to_fit(extra)
        return MessagesSnapshotEvent.model_construct(  # every message validated (now or when it last changed)
            type=EventType.MESSAGES_SNAPSHOT, messages=[*map(_known, self._models), *extra_models])

    def _cut_to_fit(self, extra: list[JsonObject], redact: Callable[[str], str] = str) -> MessagesSnapshotEvent:
        """The snapshot of copies of the messages, the longest contents cut until it fits ``SNAPSHOT_LIMIT``."""
        messages = [*(self._settled(m) for m in self._messages), *extra]
        return MessagesSnapshotEvent.model_validate({"type": EventType.MESSAGES_SNAPSHOT,
                                                     "messages": _bounded(messages, redact)})

    def _extra(self, waiting: bool) -> list[JsonObject]:
        """What a run's end commits on the page without an end event (text and reasoning with content so far) and,
        at a pause, the sub-agents' calls that wait for their result (forgotten otherwise)."""
        extra = [self._settled(m) for m in self._opening.values() if self._text.get(_id(m))]
        if waiting:
            extra += [{"id": f"{call['id']}-call", "role": "assistant", "subagentRunId": run,
                       "toolCalls": [self._settled_call(call)]}
                      for call, run in self._subagent_calls.values()]
        else:
            self._subagent_calls.clear()
        return extra

    def _validate(self, extra: list[JsonObject]) -> list[Message]:
        """Validate the changed messages (kept, with their sizes) and ``extra``; ``extra``'s models."""
        changed = sorted(self._changed)
        settled = [self._settled(self._messages[p]) for p in changed]
        if not settled and not extra:
            return []
        models = _validated([*settled, *extra])
        for position, settled_copy, model in zip(changed, settled, models, strict=False):
            size = _size(settled_copy)
            self._size += size - self._sizes[position]
            self._sizes[position], self._models[position] = size, model
            self._raw[position] = None
            self._unredacted.add(position)
        self._changed.clear()
        return models[len(settled):]

    def _too_big(self, extra: list[JsonObject]) -> bool:
        """Whether the snapshot's messages exceed ``SNAPSHOT_LIMIT`` (json.dumps' size of their list)."""
        count = len(self._messages) + len(extra)
        return self._size + sum(_size(m) for m in extra) + 2 * max(count - 1, 0) + 2 > SNAPSHOT_LIMIT

    def _feed_subagent(self, event: BaseEvent, run: str) -> None:
        if isinstance(event, ToolCallStartEvent):
            call: JsonObject = {"id": event.tool_call_id, "type": "function",
                                    "function": {"name": event.tool_call_name, "arguments": ""}}
            self._subagent_calls[event.tool_call_id] = (call, run)
        elif isinstance(event, ToolCallArgsEvent) and event.tool_call_id in self._subagent_calls:
            self._args.setdefault(event.tool_call_id, []).append(event.delta)
        elif isinstance(event, ToolCallResultEvent):
            self._subagent_calls.pop(event.tool_call_id, None)

    # ----- helpers -----------------------------------------------------------------------------------------
    def _settled(self, message: JsonObject) -> JsonObject:
        """A copy of ``message`` with its streamed pieces joined (the copy is what the bound may cut)."""
        copy = dict(message)
        pieces = self._text.get(_id(message))
        if pieces:
            joined = "".join(pieces)
            self._text[_id(message)] = [joined]
            copy["content"] = _string(message.get("content") or "") + joined
        if "toolCalls" in message:
            copy["toolCalls"] = [self._settled_call(object_or_empty(call))
                                 for call in iterable_or_empty(message["toolCalls"])]
        return copy

    def _settled_call(self, call: JsonObject) -> JsonObject:
        pieces = self._args.get(_id(call))
        if pieces:
            self._args[_id(call)] = ["".join(pieces)]
        function = object_or_empty(call["function"])
        arguments = _string(function["arguments"]) + "".join(pieces or ())
        return {**call, "function": {**function, "arguments": arguments}}

    def _touch(self, message_id: str) -> None:
        """``message_id`` changed: the next snapshot validates (and writes) it again."""
        position = self._position.get(message_id)
        if position is not None:
            self._changed.add(position)

    def _append(self, message: JsonObject) -> None:
        self._position[_id(message)] = len(self._messages)
        self._changed.add(len(self._messages))
        self._messages.append(message)
        self._by_id[_id(message)] = message
        self._models.append(None)
        self._sizes.append(0)
        self._raw.append(None)
        self._parts.append(None)

    def _open(self, message_id: str, role: str) -> JsonObject:
        """A streamed message that joins the conversation later (``_join``); the one already there, if any."""
        message = self._by_id.get(message_id) or self._opening.get(message_id)
        if message is None:
            message = self._opening[message_id] = {"id": message_id, "role": role}
        return message

    def _join(self, message_id: str) -> None:
        message = self._opening.pop(message_id, None)
        if message is not None:
            self._append(message)

    def _last_assistant_id(self) -> str | None:
        last = self._messages[-1] if self._messages else None
        return _id(last) if last is not None and last["role"] == "assistant" else None


def _wire(event: MessagesSnapshotEvent) -> str:
    return event.model_dump_json(by_alias=True, exclude_none=True)


_EMPTY = _wire(MessagesSnapshotEvent(type=EventType.MESSAGES_SNAPSHOT, messages=[]))


def _validated(messages: list[JsonObject]) -> list[Message]:
    """The ag-ui message models of ``messages`` (validated as a snapshot validates them)."""
    return MessagesSnapshotEvent.model_validate({"type": EventType.MESSAGES_SNAPSHOT, "messages": messages}).messages


def _size(message: JsonObject) -> int:
    return len(json.dumps(message, ensure_ascii=False).encode())


def _bounded(messages: list[JsonObject], redact: Callable[[str], str] = str) -> list[JsonObject]:
    """Cut the longest contents until the snapshot fits ``SNAPSHOT_LIMIT``: tool results first, then the media
    parts of user messages (each replaced by a text part saying what it was), then any other text."""
    size = len(json.dumps(messages, ensure_ascii=False).encode())
    if size <= SNAPSHOT_LIMIT:
        return messages
    fields = [(m, "content") for m in messages if isinstance(m.get("content"), str)]
    fields += [(object_or_empty(object_or_empty(c)["function"]), "arguments")
               for m in messages for c in iterable_or_empty(m.get("toolCalls"))]
    tool_results = [f for f in fields if f[0].get("role") == "tool"]
    others = [f for f in fields if f[0].get("role") != "tool"]
    for holder, key in sorted(tool_results, key=lambda f: -len(_string(f[0][f[1]]))):
        size = _cut(holder, key, size, redact)
        if size <= SNAPSHOT_LIMIT:
            return messages
    for parts, index, part, source in sorted(_media_parts(messages), key=lambda p: -len(_string(p[3]["value"]))):
        value = str(source["value"])
        decoded = len(value) * 3 // 4 - value[-2:].count("=")
        kind = source.get("mimeType", part["type"])
        note: JsonObject = {"type": "text", "text": f"[{kind} {part['type']} of {decoded} bytes left out of this "
                                                    f"snapshot; it was sent with its run]"}
        size -= len(json.dumps(part).encode()) - len(json.dumps(note).encode())
        parts[index] = note
        if size <= SNAPSHOT_LIMIT:
            return messages
    for holder, key in sorted(others, key=lambda f: -len(_string(f[0][f[1]]))):
        size = _cut(holder, key, size, redact)
        if size <= SNAPSHOT_LIMIT:
            break
    return messages


def _cut(holder: JsonObject, key: str, size: int, redact: Callable[[str], str] = str) -> int:
    """``holder[key]`` cut to ``CUT_TO`` characters, redacted first: a secret across the cut would keep its start."""
    text = _string(holder[key])
    if len(text) <= CUT_TO:
        return size
    clean = redact(text)
    cut = clean[:CUT_TO] + CUT_NOTE.format(n=len(clean) - CUT_TO)
    holder[key] = cut
    return size - (len(text.encode()) - len(cut.encode()))


def _media_parts(messages: list[JsonObject]) -> list[tuple[list[JsonValue], int, JsonObject, JsonObject]]:
    """(content list, index, the part, its source) of every inline media part longer than ``CUT_TO``."""
    found: list[tuple[list[JsonValue], int, JsonObject, JsonObject]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for index, part in enumerate(content):
            source = part.get("source") if isinstance(part, dict) else None
            if isinstance(source, dict) and source.get("type") == "data" and len(str(source.get("value"))) > CUT_TO:
                found.append((content, index, object_or_empty(part), source))
    return found


def _id(message: JsonObject) -> str:
    """A message's (or a tool call's) ``id``: a string wherever it comes from (a validated model, a stream's id)."""
    return _string(message["id"])


def _string(value: JsonValue) -> str:
    """A member that is a string, as the untyped reads used it; anything else raises TypeError, as ``+`` and ``len``
    on it did (where they failed)."""
    if not isinstance(value, str):
        raise TypeError(f"expected a JSON string, got {type(value).__name__}")
    return value


def _tool_calls(message: JsonObject) -> list[JsonValue]:
    """``message.setdefault("toolCalls", [])``: the list a held call joins."""
    calls = message.setdefault("toolCalls", [])
    if not isinstance(calls, list):
        raise TypeError(f"expected a list of tool calls, got {type(calls).__name__}")
    return calls


def _known(model: Message | None) -> Message:
    """A joined message's model, validated by the snapshot that follows its join (``_validate``)."""
    if model is None:
        raise ValueError("a message not validated yet")
    return model


def _result_content(event: ToolCallResultEvent) -> JsonValue:
    """A tool result's content as JSON: its text, or its parts as the wire writes them."""
    if isinstance(event.content, str):
        return event.content
    return [part.model_dump(mode="json", by_alias=True, exclude_none=True) for part in event.content]
