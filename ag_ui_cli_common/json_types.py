"""JSON as the CLIs, the platform and the clients send it, typed once for every package (the lowest layer):
``JsonValue`` (pydantic's: ``None``, ``bool``, ``int``, ``float``, ``str``, lists and string-keyed objects of them) and
``JsonObject``, a decoded JSON object.

``object_or_empty`` (and ``iterable_or_empty``, for a loop) reads a member that should be an object the way
``value or {}`` did before it was typed: a missing or empty member is ``{}``, an object is itself, anything else raises
``TypeError`` (where ``(value or {}).get`` raised ``AttributeError``), so a handler that meets an odd payload still
fails as it did (an adapter keeps it RAW).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import JsonValue

JsonObject = dict[str, JsonValue]


def object_or_empty(value: object) -> JsonObject:
    """``value or {}`` as a JSON object: ``{}`` for a missing or empty member, the object itself, else TypeError."""
    if not value:
        return {}
    if isinstance(value, dict):
        return value
    raise TypeError(f"expected a JSON object, got {type(value).__name__}")


def iterable_or_empty(value: JsonValue) -> Iterable[JsonValue]:
    """``value or []`` to loop over, as Python loops over it: nothing for a missing or empty member, a list's items,
    an object's keys, a string's characters; a number raises TypeError."""
    if not value:
        return ()
    if isinstance(value, list | dict | str):
        return value
    raise TypeError(f"expected a JSON list, got {type(value).__name__}")


def int_of(value: JsonValue) -> int:
    """``int(value)`` as Python reads a JSON member: a number or a numeric string is its int (a bool 0 or 1, a bad
    string ValueError); null, a list or an object raises TypeError, as ``int`` does."""
    if value is None or isinstance(value, list | dict):
        raise TypeError(f"expected a JSON number, got {type(value).__name__}")
    return int(value)


__all__ = ["JsonObject", "JsonValue", "int_of", "iterable_or_empty", "object_or_empty"]
