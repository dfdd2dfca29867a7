"""Notifications as plain wire dicts: ``{"method": str, "params": dict}``.

The adapter accepts the SDK's typed ``openai_codex.models.Notification`` (payload a pydantic model or
``UnknownNotification``), plain ``(method, params)`` pairs, or recorded ``{"method", "params"}`` dicts, and
works on the JSON form (camelCase keys, as the app-server sends them) so recorded streams and live ones
decode identically.
"""

from __future__ import annotations

from typing import TypedDict

from ag_ui_cli_common.json_types import JsonObject


class WireNotification(TypedDict):
    method: str
    params: JsonObject


def to_wire(notification: object) -> WireNotification:
    """Normalise a notification to ``{"method": str, "params": dict}``."""
    if isinstance(notification, dict):  # the params are read, never changed: not copied
        method, params = notification.get("method", ""), notification.get("params")
        return {"method": method if type(method) is str else str(method),
                "params": params if type(params) is dict else dict(params or {})}
    if isinstance(notification, tuple) and len(notification) == 2:
        method, params = notification
        return {"method": str(method), "params": payload_dict(params)}
    method = getattr(notification, "method", "")
    return {"method": str(method), "params": payload_dict(getattr(notification, "payload", None))}


def payload_dict(payload: object) -> JsonObject:
    if payload is None:
        return {}
    if isinstance(payload, dict):
        return payload
    dump = getattr(payload, "model_dump", None)
    if callable(dump):
        data = dump(by_alias=True, mode="json", exclude_none=True)
        return data if isinstance(data, dict) else {"value": data}
    params = getattr(payload, "params", None)  # openai_codex.models.UnknownNotification
    if isinstance(params, dict):
        return params
    return {"value": repr(payload)}
