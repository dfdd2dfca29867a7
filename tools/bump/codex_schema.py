"""The Codex app-server protocol of one binary, limited to what the runner uses (``ag_ui_codex_sdk.protocol``):
``codex app-server generate-json-schema --experimental`` into a folder, then each used method's parts (params,
response) as field paths (``shapes.schema_fields``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ag_ui_codex_sdk import protocol
from tools.bump.shapes import RECEIVED, SENT, Change, Field, diff_fields, reachable, refs_under, schema_fields

ENVELOPES = ("ClientRequest", "ClientNotification", "ServerRequest", "ServerNotification")
# (envelope, methods the runner uses, direction of the params, direction of the response or None)
ROLES = (
    ("ClientRequest", protocol.CLIENT_REQUESTS, SENT, RECEIVED),
    ("ClientNotification", protocol.CLIENT_NOTIFICATIONS, SENT, None),
    ("ServerRequest", protocol.SERVER_REQUESTS, RECEIVED, SENT),
    ("ServerNotification", protocol.NOTIFICATIONS, RECEIVED, None),
)
GONE = "(method not in the schema)"


def generate(codex_bin: str | Path, out: Path, *, experimental: bool = True) -> Path:
    """The binary's JSON schema bundle in ``out`` (nothing is started but the generator; no network)."""
    out.mkdir(parents=True, exist_ok=True)
    argv = [str(codex_bin), "app-server", "generate-json-schema", "--out", str(out)]
    subprocess.run(argv + (["--experimental"] if experimental else []), check=True, capture_output=True, timeout=120)
    return out


def load(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(envelopes by name, every definition by name) of a generated bundle; v2's definitions win over v1's."""
    definitions: dict[str, Any] = {}
    files = sorted(out.rglob("*.json"), key=lambda p: (p.parent.name == "v2", p.parent == out))
    for path in files:
        data = json.loads(path.read_text())
        definitions.update(_flat_definitions(data.get("definitions") or {}))
        definitions.setdefault(path.stem, data)
    envelopes = {name: json.loads((out / f"{name}.json").read_text()) for name in ENVELOPES}
    return envelopes, definitions


def _flat_definitions(definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The bundle nests a namespace's definitions (``definitions.v2.X``): flatten them by name."""
    flat: dict[str, Any] = {}
    for name, value in definitions.items():
        if isinstance(value, dict) and not any(k in value for k in ("type", "properties", "$ref", "oneOf", "anyOf",
                                                                     "allOf", "enum", "items", "const")):
            flat.update(_flat_definitions(value))
        else:
            flat[name] = value
    return flat


def method_params(envelope: Mapping[str, Any]) -> dict[str, Mapping[str, Any] | None]:
    """Each method of an envelope (``ClientRequest``...) and its params schema (None: it takes none)."""
    found: dict[str, Mapping[str, Any] | None] = {}
    for entry in envelope.get("oneOf") or []:
        props = entry.get("properties") or {}
        methods = (props.get("method") or {}).get("enum") or []
        if len(methods) == 1:
            found[str(methods[0])] = props.get("params")
    return found


def used_protocol(envelopes: Mapping[str, Any], definitions: Mapping[str, Any]) -> dict[str, dict[str, Field]]:
    """What the runner uses of a schema, as field paths: ``"<method> params"`` / ``"<method> response"`` (down to
    the first ``$ref``, a method the schema lacks being one entry, ``GONE``) and ``"def <Name> <directions>"`` for
    each definition reachable from them, each down to its own ``$ref``s: a change is reported once, in the
    definition that changed, not in every method that reaches it."""
    parts: dict[str, dict[str, Field]] = {}
    roots: dict[str, set[str]] = {}
    for envelope, methods, params_direction, response_direction in ROLES:
        offered = method_params(envelopes.get(envelope) or {})
        for method in methods:
            if method not in offered:
                parts[f"{method} params"] = {GONE: Field(frozenset({"gone"}))}
                continue
            params = offered[method]
            parts[f"{method} params"] = schema_fields(params, definitions) if params else {}
            _roots(params, params_direction, roots)
            response = _response_of(params, definitions)
            if response_direction is not None and response is not None:
                name = _response_name(params)
                parts[f"{method} response"] = {"": Field(frozenset({f"ref:{name}"}))}
                roots.setdefault(str(name), set()).add(response_direction)
    directions: dict[str, set[str]] = {}
    for root, ways in roots.items():
        for way in ways:
            for name, found in reachable({root: way}, definitions).items():
                directions.setdefault(name, set()).update(found)
    for name, ways in sorted(directions.items()):
        schema = definitions.get(name)
        if isinstance(schema, dict):
            parts[f"def {name} {'+'.join(sorted(ways))}"] = schema_fields(schema, definitions)
    return parts


def _roots(schema: Mapping[str, Any] | None, direction: str, roots: dict[str, set[str]]) -> None:
    for name in refs_under(schema or {}):
        roots.setdefault(name, set()).add(direction)


def _response_name(params: Mapping[str, Any] | None) -> str | None:
    ref = (params or {}).get("$ref")
    if not isinstance(ref, str) or not ref.endswith("Params"):
        return None
    return ref.rsplit("/", 1)[-1].removesuffix("Params") + "Response"


def _response_of(params: Mapping[str, Any] | None, definitions: Mapping[str, Any]) -> Mapping[str, Any] | None:
    name = _response_name(params)
    response = definitions.get(name) if name else None
    return response if isinstance(response, dict) else None


def _split(part: str) -> tuple[str, frozenset[str]]:
    """A part's name and the directions it travels in."""
    if part.startswith("def "):
        _, name, ways = part.split(" ")
        return f"def {name}", frozenset(ways.split("+"))
    method, _, kind = part.rpartition(" ")
    for _, methods, params_direction, response_direction in ROLES:
        if method in methods:
            return part, frozenset({params_direction if kind == "params" else (response_direction or RECEIVED)})
    return part, frozenset({RECEIVED})


def diff_protocol(old: Mapping[str, Mapping[str, Field]], new: Mapping[str, Mapping[str, Field]],
                  read_names: frozenset[str] | None = None) -> list[Change]:
    """The protocol diff of what the runner uses, between two binaries (``used_protocol`` of each)."""
    before = {_split(k)[0]: (v, _split(k)[1]) for k, v in old.items()}
    after = {_split(k)[0]: (v, _split(k)[1]) for k, v in new.items()}
    changes: list[Change] = []
    for part in sorted(before.keys() | after.keys()):
        (was, ways_was), (now, ways_now) = before.get(part, ({}, frozenset())), after.get(part, ({}, frozenset()))
        if part not in before:
            changes.append(Change("added", part, "now used (reached from a used method)" if part.startswith("def ")
                                  else "now in the schema"))
        elif part not in after:
            changes.append(Change("removed", part, "no longer reached from a used method" if part.startswith("def ")
                                  else "gone", blocking=not part.startswith("def ")))
        elif GONE in now and GONE not in was:
            changes.append(Change("removed", part.rpartition(" ")[0], "method gone", blocking=True))
        elif GONE in was and GONE not in now:
            changes.append(Change("added", part.rpartition(" ")[0], "method now in the schema"))
        elif GONE not in was:
            changes += diff_fields(part, was, now, ways_was | ways_now, read_names)
    return changes


def experimental_missing(parts: Mapping[str, Mapping[str, Field]]) -> list[str]:
    """The experimental fields the runner relies on that the schema no longer has, each named."""
    return [f"{e.method} {e.field} (sent by {e.module}: {e.why})" for e in protocol.EXPERIMENTAL
            if e.field not in parts.get(f"{e.method} params", {}) and not _in_params_definition(parts, e)]


def _in_params_definition(parts: Mapping[str, Mapping[str, Field]], field: protocol.ExperimentalField) -> bool:
    """The field in the definition the method's params refer to (``thread/start params`` -> ThreadStartParams)."""
    root = parts.get(f"{field.method} params", {}).get("")
    names = {t.removeprefix("ref:") for t in (root.types if root else ())}
    return any(part.split(" ")[1] in names and field.field in fields
               for part, fields in parts.items() if part.startswith("def "))


# ----- a snapshot as JSON (the bump takes one before and one after the reinstall) ----------------------------------
def to_json(parts: Mapping[str, Mapping[str, Field]]) -> dict[str, Any]:
    return {part: {path: {"types": sorted(f.types), "required": f.required, "enum": sorted(f.enum)}
                   for path, f in fields.items()} for part, fields in parts.items()}


def from_json(data: Mapping[str, Any]) -> dict[str, dict[str, Field]]:
    return {part: {path: Field(frozenset(f["types"]), bool(f["required"]), frozenset(f["enum"]))
                   for path, f in fields.items()} for part, fields in data.items()}
