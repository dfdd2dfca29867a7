"""The protocol diff: what two versions of a CLI say, compared by message kinds, key paths and types, never by
values (ports, ids, timestamps, texts). Pure functions, no I/O: tests/tools/test_bump_shapes.py.

* a recorded stream (Claude Code's stream-json) -> ``stream_shape``: kind (``type/subtype``) -> key path -> JSON
  types;
* a JSON schema (Codex's ``generate-json-schema``) -> ``schema_fields``: field path -> types, required, enum values;
* a command line (the SDK's transport) -> ``argv_shape``: flag -> how its value is passed;
* the ACP answers (Gemini's ``initialize`` and ``session/new``) -> ``acp_shape``: key paths, and the ids offered
  (modes, models, configOptions).

Each diff is a list of ``Change``: an addition (a new key, kind, field, flag or enum value: reported, not a
failure) or a removal or change, which ``blocking`` marks as what makes a bump not safe.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Shape = dict[str, dict[str, frozenset[str]]]  # kind -> key path -> JSON types seen
MAX_DEPTH = 6  # key paths deeper than this are cut (data nested in data)
DATA_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a protocol key; anything else (a model name, a path) is data


@dataclass(frozen=True, slots=True)
class Change:
    """One difference: ``what`` is ``added``, ``removed`` or ``changed``; ``where`` names the kind/method and path."""

    what: str
    where: str
    detail: str = ""
    blocking: bool = False
    scenarios: tuple[str, ...] = field(default=())

    def line(self) -> str:
        sign = {"added": "+", "removed": "-", "changed": "~"}.get(self.what, "?")
        seen = f"  [{', '.join(self.scenarios)}]" if self.scenarios else ""
        return f"{sign} {self.where}{f': {self.detail}' if self.detail else ''}{seen}"


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def key_paths(value: Any, prefix: str = "", depth: int = 0) -> dict[str, set[str]]:
    """Every key path under ``value`` with the JSON types seen there: ``a.b``, ``a[].c`` (list items merged),
    ``a.*`` (a key that is data, e.g. a model name)."""
    paths: dict[str, set[str]] = {}
    if depth >= MAX_DEPTH:
        return paths
    children: Iterable[tuple[str, Any]] = ()
    if isinstance(value, dict):
        children = ((f"{prefix}.{k if DATA_KEY.match(str(k)) else '*'}" if prefix else
                     (str(k) if DATA_KEY.match(str(k)) else "*"), v) for k, v in value.items())
    elif isinstance(value, list):
        children = ((f"{prefix}[]", v) for v in value)
    for path, child in children:
        paths.setdefault(path, set()).add(json_type(child))
        for sub, types in key_paths(child, path, depth + 1).items():
            paths.setdefault(sub, set()).update(types)
    return paths


def stream_shape(messages: Iterable[Mapping[str, Any]], kind_of: Callable[[Mapping[str, Any]], str]) -> Shape:
    """What a stream's messages look like: each kind's key paths and their types."""
    shape: dict[str, dict[str, set[str]]] = {}
    for message in messages:
        kind = shape.setdefault(kind_of(message), {})
        for path, types in key_paths(message).items():
            kind.setdefault(path, set()).update(types)
    return {k: {p: frozenset(t) for p, t in paths.items()} for k, paths in shape.items()}


def claude_kind(message: Mapping[str, Any]) -> str:
    """A Claude Code stream-json message's kind: ``type/subtype``, a partial ``stream_event/<event type>``, the
    content block or delta type after a colon."""
    kind = str(message.get("type"))
    if kind == "stream_event":
        event = message.get("event") if isinstance(message.get("event"), dict) else {}
        assert isinstance(event, dict)
        inner = event.get("content_block") or event.get("delta") or {}
        detail = inner.get("type") if isinstance(inner, dict) and event.get("type") != "message_delta" else None
        return f"stream_event/{event.get('type')}" + (f":{detail}" if detail else "")
    subtype = message.get("subtype")
    return f"{kind}/{subtype}" if isinstance(subtype, str) else kind


def diff_shapes(old: Shape, new: Shape, *, quiet_kinds: Callable[[str], bool] = lambda kind: True,
                read_names: frozenset[str] | None = None) -> list[Change]:
    """Kinds and key paths gained, lost or retyped. A new kind is blocking unless ``quiet_kinds`` says the runner
    ignores it (the adapter emits nothing for it); a new key on a known kind never is. A key lost or retyped is
    blocking when the runner may read it: its name is in ``read_names`` (``names_read`` of the code that reads
    these messages), or always when ``read_names`` is None."""

    def read(path: str) -> bool:
        return read_names is None or normal_name(last_key(path)) in read_names

    changes: list[Change] = []
    for kind in sorted(new.keys() - old.keys()):
        quiet = quiet_kinds(kind)
        changes.append(Change("added", kind, "new message kind" + ("" if quiet else ": the adapter passes it on "
                              "as RAW (translate it, or make it quiet)"), blocking=not quiet))
    for kind in sorted(old.keys() - new.keys()):
        changes.append(Change("removed", kind, "message kind no longer sent (in these recordings)", blocking=True))
    for kind in sorted(old.keys() & new.keys()):
        before, after = old[kind], new[kind]
        for path in sorted(after.keys() - before.keys()):
            changes.append(Change("added", f"{kind} {path}", "/".join(sorted(after[path]))))
        for path in sorted(before.keys() - after.keys()):
            changes.append(Change("removed", f"{kind} {path}", "/".join(sorted(before[path])) + (
                "" if read(path) else ", not read by the runner"), blocking=read(path)))
        for path in sorted(before.keys() & after.keys()):
            if not before[path] <= after[path] and "null" not in before[path] | after[path]:
                changes.append(Change("changed", f"{kind} {path}",
                                      f"{'/'.join(sorted(before[path]))} -> {'/'.join(sorted(after[path]))}" + (
                                          "" if read(path) else ", not read by the runner"), blocking=read(path)))
    return changes


def last_key(path: str) -> str:
    """``a.b[].c`` -> ``c``; ``a[]`` -> ``a``; ``item<agentMessage>.text`` -> ``text``."""
    bare = re.sub(r"<[^>]*>|\[\]|\{\}|\.\*", "", path)
    return bare.rsplit(".", 1)[-1]


STRING_LITERAL = re.compile(r"""(?P<q>["'])(?P<text>[A-Za-z_][A-Za-z0-9_]*)(?P=q)""")


def string_literals(source: str) -> frozenset[str]:
    """The identifier-like string literals of some Python source (``"is_error"``, ``'subtype'``): the keys it may
    read from a message. Attribute reads of the SDK's dataclasses are its parser's literals."""
    return frozenset(m["text"] for m in STRING_LITERAL.finditer(source))


def merge_scenarios(per_scenario: Mapping[str, list[Change]]) -> list[Change]:
    """One change per distinct difference, naming the scenarios (recordings) it was seen in."""
    merged: dict[tuple[str, str, str, bool], list[str]] = {}
    for scenario, changes in sorted(per_scenario.items()):
        for change in changes:
            merged.setdefault((change.what, change.where, change.detail, change.blocking), []).append(scenario)
    return [Change(what, where, detail, blocking, tuple(scenarios))
            for (what, where, detail, blocking), scenarios in merged.items()]


# ----- JSON schemas (Codex's generate-json-schema) -----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Field:
    types: frozenset[str]
    required: bool = False
    enum: frozenset[str] = frozenset()


def schema_fields(schema: Mapping[str, Any], definitions: Mapping[str, Any], prefix: str = "",
                  inline: bool = False, depth: int = 0) -> dict[str, Field]:
    """The field paths of one JSON schema node down to the next ``$ref`` (a field of another definition's type
    is ``ref:<Name>``; ``inline`` resolves the node itself when it is a ``$ref``). A union's variants tagged by a
    constant (their ``type``, ``method``...) get a path each (``<agentMessage>.text``); untagged variants are
    merged into one (a field is required only when every variant requires it), so a variant split in two, or a
    variant added, moves no path; a variant that is a ``$ref`` is read in place. A nullable field's ``null`` is one
    of its types; ``required`` is whether the enclosing object requires the field."""
    fields: dict[str, Field] = {}
    if depth > 24:
        return fields
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = definitions.get(name)
        if not inline or not isinstance(target, dict):
            return {prefix: Field(frozenset({f"ref:{name}" + ("" if isinstance(target, dict) else "?")}))}
        return schema_fields(target, definitions, prefix, False, depth + 1)
    own = schema.get("type")
    types = [own] if isinstance(own, str) else [str(t) for t in own or []]
    enum = [str(v) for v in schema.get("enum") or []] + ([str(schema["const"])] if "const" in schema else [])
    if types or enum:
        _merge(fields, {prefix: Field(frozenset(types or ["string"]), False, frozenset(enum))})
    variants = [v for union in ("anyOf", "oneOf") for v in schema.get(union) or [] if isinstance(v, dict)]
    untagged: list[dict[str, Field]] = []
    for variant in variants:
        if variant == {"type": "null"}:
            _merge(fields, {prefix: Field(frozenset({"null"}))})
            continue
        tag = _variant_tag(variant, definitions)
        if tag:
            _merge(fields, schema_fields(variant, definitions, f"{prefix}<{tag}>", True, depth + 1))
        else:
            untagged.append(schema_fields(variant, definitions, prefix, True, depth + 1))
    if untagged:
        _merge(fields, _merge_variants(untagged))
    for part in schema.get("allOf") or []:
        if isinstance(part, dict):
            _merge(fields, schema_fields(part, definitions, prefix, True, depth + 1))
    needed = set(schema.get("required") or [])
    for name, child in (schema.get("properties") or {}).items():
        if isinstance(child, dict):
            path = f"{prefix}.{name}" if prefix else name
            _merge(fields, {path: Field(frozenset(), name in needed)})
            _merge(fields, schema_fields(child, definitions, path, False, depth + 1))
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        child = schema.get(key)
        if isinstance(child, dict) and child:
            _merge(fields, schema_fields(child, definitions, prefix + suffix, False, depth + 1))
    return fields


def refs_under(schema: Any) -> set[str]:
    """The definition names a schema node refers to, anywhere under it (not following them)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            found.add(ref.rsplit("/", 1)[-1])
        for value in schema.values():
            found |= refs_under(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= refs_under(value)
    return found


def reachable(roots: Mapping[str, str], definitions: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Every definition reachable from ``roots`` (definition name -> direction), with the directions it is
    reached in."""
    directions: dict[str, set[str]] = {}
    for root, direction in roots.items():
        todo = [root]
        while todo:
            name = todo.pop()
            if direction in directions.setdefault(name, set()):
                continue
            directions[name].add(direction)
            todo += sorted(refs_under(definitions.get(name)))
    return {name: frozenset(d) for name, d in directions.items()}


def _merge(into: dict[str, Field], more: Mapping[str, Field]) -> None:
    for path, found in more.items():
        now = into.get(path)
        into[path] = found if now is None else Field(now.types | found.types, now.required or found.required,
                                                     now.enum | found.enum)


def _merge_variants(variants: list[dict[str, Field]]) -> dict[str, Field]:
    """Untagged union variants as one: every path of any, required where all of them require it."""
    merged: dict[str, Field] = {}
    for variant in variants:
        for path, found in variant.items():
            now = merged.get(path)
            merged[path] = Field(found.types | (now.types if now else frozenset()), False,
                                 found.enum | (now.enum if now else frozenset()))
    for path in merged:
        if all(path in v and v[path].required for v in variants):
            merged[path] = Field(merged[path].types, True, merged[path].enum)
    return merged


def _variant_tag(variant: Mapping[str, Any], definitions: Mapping[str, Any]) -> str:
    """A union variant's tag: the constant of its ``type`` / ``method`` / ``kind`` / ``mode`` (no tag: "")."""
    node = variant
    ref = variant.get("$ref")
    if isinstance(ref, str):
        node = definitions.get(ref.rsplit("/", 1)[-1]) or {}
    for key in ("type", "method", "kind", "mode"):
        prop = (node.get("properties") or {}).get(key) or {}
        values = prop.get("enum") or ([prop["const"]] if "const" in prop else [])
        if len(values) == 1:
            return str(values[0])
    return ""


SENT, RECEIVED = "sent", "received"  # which way a method's part travels, seen from the runner


def diff_fields(where: str, old: Mapping[str, Field], new: Mapping[str, Field], directions: Iterable[str],
                read_names: frozenset[str] | None = None) -> list[Change]:
    """One definition's (or method part's) fields gained, lost or changed, ``directions`` being the ways it
    travels. A new field, enum value or variant is ignored by what receives it; a new required field in what the
    runner sends is blocking. A field that goes or changes type, or an enum value that goes, is blocking when the
    runner may use it: its name is in ``read_names`` (``names_read`` of the runner's code; None: always) or,
    for an enum value, the runner sends it."""
    ways = frozenset(directions)
    changes: list[Change] = []

    def used(path: str) -> bool:
        return read_names is None or normal_name(last_key(path)) in read_names

    for path in sorted(new.keys() - old.keys()):
        field_ = new[path]
        if SENT in ways and field_.required and _parent_present(path, old):
            changes.append(Change("added", _where(where, path), "new required field in what the runner sends",
                                  blocking=True))
        else:
            changes.append(Change("added", _where(where, path), _describe(field_)))
    for path in sorted(old.keys() - new.keys()):
        changes.append(Change("removed", _where(where, path), _describe(old[path]) + _unused(used(path)),
                              blocking=used(path)))
    for path in sorted(old.keys() & new.keys()):
        before, after = old[path], new[path]
        if before.types - after.types and after.types:
            changes.append(Change("changed", _where(where, path), f"types {_set(before.types)} -> "
                                  f"{_set(after.types)}" + _unused(used(path)), blocking=used(path)))
        if before.enum - after.enum:
            blocking = SENT in ways or used(path)
            changes.append(Change("removed", _where(where, path), f"values {_set(before.enum - after.enum)}"
                                  + _unused(blocking), blocking=blocking))
        if after.enum - before.enum:
            changes.append(Change("added", _where(where, path), f"values {_set(after.enum - before.enum)}"))
        if SENT in ways and after.required and not before.required:
            changes.append(Change("changed", _where(where, path), "now required", blocking=True))
    return changes


def _where(where: str, path: str) -> str:
    return f"{where} {path}" if path else where


def _unused(used: bool) -> str:
    return "" if used else ", not used by the runner"


def normal_name(name: str) -> str:
    """``approval_policy``, ``approvalPolicy`` -> ``approvalpolicy``: a wire key and a Python name compared."""
    return name.replace("_", "").lower()


ATTRIBUTE = re.compile(r"\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)")


def names_read(source: str) -> frozenset[str]:
    """What some Python source may read from a message, as ``normal_name``s: its identifier-like string literals
    (``"is_error"``, ``params.get("item")``) and attribute names (``started.turn.id``)."""
    return frozenset(normal_name(n) for n in string_literals(source) | {m["name"] for m in ATTRIBUTE.finditer(source)})


def _parent_present(path: str, fields: Mapping[str, Field]) -> bool:
    """A new required field matters when its parent object was there before (else the parent is new too)."""
    parent = re.sub(r"(\.[^.<\[{]+|\[\]|\{\}|<[^>]*>)$", "", path)
    return parent == path or parent == "" or parent in fields


def _describe(field_: Field) -> str:
    text = _set(field_.types)
    if field_.enum:
        text += f" values {_set(field_.enum)}"
    return text + (" (required)" if field_.required else "")


def _set(values: Iterable[str]) -> str:
    return "|".join(sorted(values))


# ----- the SDK's command line (Claude's transport) ------------------------------------------------------------
def argv_shape(argv: list[str]) -> dict[str, str]:
    """Each ``--flag`` of a command line and how its value goes: ``alone``, ``next`` (``--flag value``) or
    ``joined`` (``--flag=value``). Values are not compared."""
    shape: dict[str, str] = {}
    for index, arg in enumerate(argv):
        if not arg.startswith("--"):
            continue
        if "=" in arg:
            shape[arg.split("=", 1)[0]] = "joined"
        else:
            following = argv[index + 1] if index + 1 < len(argv) else None
            shape[arg] = "next" if following is not None and not following.startswith("--") else "alone"
    return shape


def diff_argv(old: Mapping[str, str], new: Mapping[str, str]) -> list[Change]:
    """Flags the SDK passes for the runner's options: a flag gone is blocking (an option no longer reaches the
    CLI); a new flag, or a value passed another way, is the SDK's business with its own CLI (reported)."""
    changes = [Change("added", f"transport {flag}", new[flag]) for flag in sorted(new.keys() - old.keys())]
    changes += [Change("removed", f"transport {flag}", old[flag], blocking=True)
                for flag in sorted(old.keys() - new.keys())]
    changes += [Change("changed", f"transport {flag}", f"{old[flag]} -> {new[flag]}")
                for flag in sorted(old.keys() & new.keys()) if old[flag] != new[flag]]
    return changes


# ----- ACP answers (Gemini) ---------------------------------------------------------------------------------------
OFFERED = {  # path of a list in an ACP answer -> the key that names each entry
    "session/new modes.availableModes": "id",
    "session/new models.availableModels": "modelId",
    "session/new configOptions": "id",
}


def acp_shape(answers: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """The ACP answers (``{"initialize": result, "session/new": result}``) as key paths with their types, plus
    ``<path> ids`` entries for what is offered (modes, models, config options)."""
    shape: dict[str, frozenset[str]] = {}
    for method, result in sorted(answers.items()):
        for path, types in key_paths(result).items():
            shape[f"{method} {path}"] = frozenset(types)
        for offered, key in OFFERED.items():
            owner, _, path = offered.partition(" ")
            if owner != method:
                continue
            entries = _at(result, path.split("."))
            if isinstance(entries, list):
                shape[f"{offered} ids"] = frozenset(str(e.get(key)) for e in entries if isinstance(e, dict))
    return shape


def _at(value: Any, keys: list[str]) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def diff_acp(old: Mapping[str, frozenset[str]], new: Mapping[str, frozenset[str]],
             used_ids: Mapping[str, Iterable[str]] | None = None) -> list[Change]:
    """ACP fields gained or lost; ids offered gained or lost (losing one the runner uses, ``used_ids``, is
    blocking; losing another is reported)."""
    used = {k: set(v) for k, v in (used_ids or {}).items()}
    changes: list[Change] = []
    for key in sorted(new.keys() - old.keys()):
        changes.append(Change("added", key, _set(new[key])))
    for key in sorted(old.keys() - new.keys()):
        changes.append(Change("removed", key, _set(old[key]), blocking=not key.endswith(" ids") or bool(used.get(
            key.removesuffix(" ids")))))
    for key in sorted(old.keys() & new.keys()):
        if key.endswith(" ids"):
            gone, came = old[key] - new[key], new[key] - old[key]
            if came:
                changes.append(Change("added", key, _set(came)))
            if gone:
                lost_used = gone & used.get(key.removesuffix(" ids"), set())
                changes.append(Change("removed", key, _set(gone) + (f" (the runner uses {_set(lost_used)})"
                                                                   if lost_used else ""), blocking=bool(lost_used)))
        elif old[key] - new[key] and "null" not in old[key] | new[key]:
            changes.append(Change("changed", key, f"{_set(old[key])} -> {_set(new[key])}", blocking=True))
    return changes


def verdict(changes: Iterable[Change], failures: Iterable[str]) -> str:
    """The bump's last line: ``safe`` or ``not safe: <why>``."""
    why = list(failures) + [f"{c.what} {c.where}" + (f" ({c.detail})" if c.detail else "")
                            for c in changes if c.blocking]
    if not why:
        return "safe"
    more = f" (and {len(why) - 3} more)" if len(why) > 3 else ""
    return "not safe: " + "; ".join(why[:3]) + more
