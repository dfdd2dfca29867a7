"""AG-UI events as the tests compare them: ``wire`` (an event as the client reads it) and the builders of the
expected wire dicts (``text``, ``tool``, ``finished``, ``run_error``).

    assert wire_all(adapter.run(lines)) == [*text("m1", "Hel", "lo"), finished(usage_entry)]
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ag_ui.core import BaseEvent


def wire(event: BaseEvent) -> dict[str, Any]:
    """One event as it goes on the wire: camelCase keys, no null fields."""
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


def wire_all(events: Iterable[BaseEvent], *, drop: Iterable[str] = ()) -> list[dict[str, Any]]:
    """``wire`` of each event, without the keys in ``drop`` (e.g. ``"timestamp"``)."""
    dropped = tuple(drop)
    out = []
    for event in events:
        data = wire(event)
        for key in dropped:
            data.pop(key, None)
        out.append(data)
    return out


def text(message_id: str, *deltas: str, **marks: Any) -> list[dict[str, Any]]:
    """A whole assistant text message: START, one CONTENT per delta, END (``marks``: on each of them)."""
    return [{"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant", **marks},
            *({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": d, **marks} for d in deltas),
            {"type": "TEXT_MESSAGE_END", "messageId": message_id, **marks}]


def tool(call_id: str, name: str, args: dict[str, Any] | str, result: dict[str, Any] | str | None = None, *,
         result_suffix: str = "-result", **marks: Any) -> list[dict[str, Any]]:
    """A whole tool call: START, ARGS (``args`` as JSON), END, and its RESULT when ``result`` is given (a dict
    is sent as JSON). ``marks`` (e.g. ``parentMessageId``) go on the START."""
    events = [{"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name, **marks},
              {"type": "TOOL_CALL_ARGS", "toolCallId": call_id,
               "delta": args if isinstance(args, str) else json.dumps(args)},
              {"type": "TOOL_CALL_END", "toolCallId": call_id}]
    if result is not None:
        events.append({"type": "TOOL_CALL_RESULT", "messageId": f"{call_id}{result_suffix}", "toolCallId": call_id,
                       "content": result if isinstance(result, str) else json.dumps(result), "role": "tool"})
    return events


def finished(*usage: dict[str, Any], thread_id: str = "thread-1", run_id: str = "run-1",
             **fields: Any) -> dict[str, Any]:
    """RUN_FINISHED with these usage entries (none: no usage) and other fields (``outcome``, ``result``)."""
    event = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, **fields}
    if usage:
        event["usage"] = list(usage)
    return event


def run_error(code: str, message: str) -> dict[str, Any]:
    """The whole RUN_ERROR event."""
    return {"type": "RUN_ERROR", "message": message, "code": code}
