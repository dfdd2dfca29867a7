"""The protocol diff of two snapshots (``tools.bump.snapshot``) of one runner: pure, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tools.bump import codex_schema, shapes
from tools.bump.shapes import Change

# The ACP ids the Gemini runner uses: a mode it switches to
# (ambient_runner/bridges/gemini_cli/acp/__init__.py: session_mode).
GEMINI_USED_IDS = {"session/new modes.availableModes": ("default", "yolo", "plan")}


def diff_snapshots(runner: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    if runner == "claude":
        return claude_diff(before, after)
    if runner == "codex-sdk":
        return codex_diff(before, after)
    if runner == "gemini-cli":
        return shapes.diff_acp(shapes.acp_shape(before.get("acp") or {}), shapes.acp_shape(after.get("acp") or {}),
                               GEMINI_USED_IDS)
    raise ValueError(f"no protocol diff for {runner!r}")


def _stream(data: Mapping[str, Any]) -> shapes.Shape:
    return {kind: {path: frozenset(types) for path, types in paths.items()} for kind, paths in data.items()}


def claude_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Message kinds and key sets of each recording, scenario by scenario (a scenario recorded on one side only is
    reported, not compared), then the transport's flags."""
    reads = frozenset(after.get("reads") or before.get("reads") or []) or None
    raw_kinds = set(after.get("rawKinds") or [])
    old, new = before.get("streams") or {}, after.get("streams") or {}
    per_scenario = {name: shapes.diff_shapes(_stream(old[name]), _stream(new[name]), read_names=reads,
                                             quiet_kinds=lambda kind: kind not in raw_kinds)
                    for name in sorted(old.keys() & new.keys())}
    changes = shapes.merge_scenarios(per_scenario)
    changes += [Change("added", f"recording {name}", "recorded with the new version only")
                for name in sorted(new.keys() - old.keys())]
    changes += [Change("removed", f"recording {name}", "not recorded with the new version", blocking=True)
                for name in sorted(old.keys() - new.keys())]
    return changes + shapes.diff_argv(before.get("transport") or {}, after.get("transport") or {})


def codex_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """The methods and notifications the runner uses, between the two binaries' generated schemas; an
    experimental field the runner relies on that the new schema lacks is blocking."""
    reads = frozenset(after.get("reads") or before.get("reads") or []) or None
    changes = codex_schema.diff_protocol(codex_schema.from_json(before.get("protocol") or {}),
                                         codex_schema.from_json(after.get("protocol") or {}), reads)
    changes += [Change("removed", f"experimental field {missing}", "the runner sends it", blocking=True)
                for missing in after.get("experimentalMissing") or []]
    return changes


def report(changes: list[Change]) -> list[str]:
    """The diff as printed: removals and changes first (what a maintainer must look at), then additions."""
    if not changes:
        return ["no protocol change"]
    ordered = sorted(changes, key=lambda c: (not c.blocking, c.what == "added", c.where))
    return [c.line() + ("    <- blocking" if c.blocking else "") for c in ordered]
