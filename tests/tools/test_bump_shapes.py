"""The protocol diff of ``make bump`` (tools/bump): pure functions on hand-made data and on the recorded streams.
No network, no CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tools.bump import codex_schema, pins, shapes
from tools.bump.diff import claude_diff, diff_snapshots, report
from tools.bump.main import newest_from_pip_index
from tools.bump.shapes import RECEIVED, SENT, Change, Field

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def recorded(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ----- recorded streams: kinds and key sets, never values -----------------------------------------------------------
def test_a_stream_shape_keeps_kinds_keys_and_types_never_values() -> None:
    one = [{"type": "system", "subtype": "init", "session_id": "a", "port": 41234, "written_at": "2026-12-06T07:00Z",
            "modelUsage": {"claude-opus-5-5": {"inputTokens": 1}}}]
    other = [{"type": "system", "subtype": "init", "session_id": "b", "port": 35145, "written_at": "2027-01-01T00:00Z",
              "modelUsage": {"claude-sonnet-4-5": {"inputTokens": 9}}}]
    shape = shapes.stream_shape(one, shapes.claude_kind)
    assert shape == shapes.stream_shape(other, shapes.claude_kind)
    assert shape["system/init"]["modelUsage.*.inputTokens"] == frozenset({"number"})  # a model name is data
    assert shapes.diff_shapes(shape, shapes.stream_shape(other, shapes.claude_kind)) == []


@pytest.mark.parametrize(("message", "kind"), [
    ({"type": "result", "subtype": "success"}, "result/success"),
    ({"type": "user", "message": {}}, "user"),
    ({"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "text_delta"}}},
     "stream_event/content_block_delta:text_delta"),
    ({"type": "stream_event", "event": {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}},
     "stream_event/message_delta"),
])
def test_claude_kinds(message: dict[str, Any], kind: str) -> None:
    assert shapes.claude_kind(message) == kind


def shape_of(*messages: dict[str, Any]) -> shapes.Shape:
    return shapes.stream_shape(messages, shapes.claude_kind)


def test_an_added_key_is_reported_not_blocking_and_a_lost_key_blocks_when_the_runner_reads_it() -> None:
    old = shape_of({"type": "result", "subtype": "success", "is_error": False, "meta": {"reason_type": "mode"}})
    new = shape_of({"type": "result", "subtype": "success", "is_error": True, "meta": {}, "written_at": "t"})
    changes = shapes.diff_shapes(old, new, read_names=frozenset({"iserror", "subtype", "type"}))
    assert changes == [
        Change("added", "result/success written_at", "string"),
        Change("removed", "result/success meta.reason_type", "string, not read by the runner", blocking=False)]
    read = shapes.diff_shapes(old, new, read_names=frozenset({"reasontype"}))
    assert [c.blocking for c in read if c.what == "removed"] == [True]
    assert shapes.verdict(changes, []) == "safe"


def test_a_new_kind_blocks_only_when_the_adapter_passes_it_on_as_raw() -> None:
    old, new = shape_of({"type": "user"}), shape_of({"type": "user"}, {"type": "system", "subtype": "brand_new"})
    assert [c.blocking for c in shapes.diff_shapes(old, new, quiet_kinds=lambda kind: True)] == [False]
    (raw,) = shapes.diff_shapes(old, new, quiet_kinds=lambda kind: False)
    assert raw.blocking and raw.where == "system/brand_new" and "RAW" in raw.detail
    gone = shapes.diff_shapes(new, old)
    assert [(c.what, c.where, c.blocking) for c in gone] == [("removed", "system/brand_new", True)]


def test_a_retyped_key_blocks_but_a_key_becoming_null_does_not() -> None:
    old = shape_of({"type": "result", "num_turns": 2, "stop_reason": "end_turn"})
    new = shape_of({"type": "result", "num_turns": "2", "stop_reason": None})
    assert [(c.where, c.blocking) for c in shapes.diff_shapes(old, new)] == [("result num_turns", True)]


def test_changes_seen_in_several_recordings_are_one_line_naming_them() -> None:
    added = Change("added", "result/success written_at", "string")
    merged = shapes.merge_scenarios({"b": [added], "a": [added], "c": []})
    assert merged == [Change("added", "result/success written_at", "string", scenarios=("a", "b"))]
    assert merged[0].line() == "+ result/success written_at: string  [a, b]"


def test_the_two_recorded_claude_versions_differ_only_by_additions() -> None:
    """The kept recordings (claude/2.1.332 -> claude/2.1.337) of one plan-mode scenario: what the bump to
    claude-agent-sdk 0.2.190 printed for it."""
    old, new = (recorded(FIXTURES / "claude" / v / "plan_refused.jsonl") for v in ("2.1.332", "2.1.337"))
    changes = shapes.diff_shapes(shape_of(*old), shape_of(*new))
    assert {c.where for c in changes} >= {"result/success errors", "result/success errors[]",
                                          "result/success permission_denials[].auto_mode_unchecked",
                                          "result/success written_at", "system/init written_at"}
    assert all(c.what == "added" and not c.blocking for c in changes), [c.line() for c in changes]


def test_a_claude_snapshot_diff_compares_the_same_recordings_and_the_transport() -> None:
    stream = {"result/success": {"is_error": ["boolean"]}}
    before = {"streams": {"tool_call": stream, "gone": stream}, "transport": {"--model": "next", "--verbose": "alone"},
              "reads": ["iserror"]}
    after = {"streams": {"tool_call": {"result/success": {"is_error": ["boolean"], "written_at": ["string"]}},
                         "plan_refused": stream},
             "transport": {"--model": "joined", "--effort": "joined"}, "reads": ["iserror"]}
    lines = report(claude_diff(before, after))
    assert lines == [
        "- recording gone: not recorded with the new version    <- blocking",
        "- transport --verbose: alone    <- blocking",
        "~ transport --model: next -> joined",
        "+ recording plan_refused: recorded with the new version only",
        "+ result/success written_at: string  [tool_call]",
        "+ transport --effort: joined"]


# ----- JSON schemas (Codex) ----------------------------------------------------------------------------------------
DEFS: dict[str, Any] = {
    "Item": {"oneOf": [
        {"type": "object", "required": ["type", "text"],
         "properties": {"type": {"enum": ["agentMessage"], "type": "string"}, "text": {"type": "string"}}},
        {"$ref": "#/definitions/CommandItem"}]},
    "CommandItem": {"type": "object", "required": ["type"],
                    "properties": {"type": {"enum": ["commandExecution"], "type": "string"},
                                   "exitCode": {"type": ["integer", "null"]}}},
    "Audio": {"type": "object", "required": ["audio_url"], "properties": {"audio_url": {"type": "string"}}},
    "StartParams": {"type": "object", "required": ["threadId"], "properties": {
        "threadId": {"type": "string"}, "item": {"$ref": "#/definitions/Item"},
        "policy": {"anyOf": [{"enum": ["never", "untrusted"], "type": "string"}, {"type": "null"}]}}},
}


def test_schema_fields_name_tagged_variants_and_stop_at_refs() -> None:
    fields = shapes.schema_fields({"$ref": "#/definitions/StartParams"}, DEFS, inline=True)
    assert fields["threadId"] == Field(frozenset({"string"}), True)
    assert fields["item"].types == frozenset({"ref:Item"})
    assert fields["policy"] == Field(frozenset({"string", "null"}), False, frozenset({"never", "untrusted"}))
    item = shapes.schema_fields(DEFS["Item"], DEFS)
    assert item["<agentMessage>.text"] == Field(frozenset({"string"}), True)
    assert item["<commandExecution>.exitCode"].types == frozenset({"integer", "null"})


def test_an_untagged_variant_split_in_two_moves_no_path() -> None:
    old = {"oneOf": [{"$ref": "#/definitions/Audio"}]}
    split = {"oneOf": [{"$ref": "#/definitions/Audio"},
                       {"type": "object", "required": ["file_id"], "properties": {"file_id": {"type": "string"}}}]}
    before, after = shapes.schema_fields(old, DEFS), shapes.schema_fields(split, DEFS)
    assert before["audio_url"].required and not after["audio_url"].required  # one variant no longer has it
    assert shapes.diff_fields("Content", before, after, {RECEIVED}) == [
        Change("added", "Content file_id", "string")]


def test_what_the_runner_sends_may_not_gain_a_required_field() -> None:
    old = shapes.schema_fields(DEFS["StartParams"], DEFS)
    grown = json.loads(json.dumps(DEFS["StartParams"]))
    grown["properties"]["attestation"] = {"type": "string"}
    grown["required"].append("attestation")
    new = shapes.schema_fields(grown, DEFS)
    sent = shapes.diff_fields("StartParams", old, new, {SENT})
    assert [(c.where, c.blocking) for c in sent] == [("StartParams attestation", True)]
    assert [(c.where, c.blocking) for c in shapes.diff_fields("StartParams", old, new, {RECEIVED})] == [
        ("StartParams attestation", False)]


def test_an_enum_value_that_goes_blocks_what_the_runner_sends() -> None:
    old = {"policy": Field(frozenset({"string"}), False, frozenset({"never", "on-failure"}))}
    new = {"policy": Field(frozenset({"string"}), False, frozenset({"never"}))}
    assert [c.blocking for c in shapes.diff_fields("TurnStartParams", old, new, {SENT})] == [True]
    assert [c.blocking for c in shapes.diff_fields("Notice", old, new, {RECEIVED}, frozenset())] == [False]


def bundle(*, drop_method: bool = False, drop_field: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tiny generated schema: two client requests, one notification."""
    defs = json.loads(json.dumps(DEFS))
    defs["ThreadStartParams"] = {"type": "object", "properties": {"cwd": {"type": "string"},
                                                                   "dynamicTools": {"type": ["array", "null"]}}}
    defs["ThreadStartResponse"] = {"type": "object", "properties": {"thread": {"type": "object"}}}
    defs["TurnStartParams"] = {"type": "object", "properties": {"collaborationMode": {"type": ["object", "null"]}}}
    if drop_field:
        del defs["ThreadStartParams"]["properties"]["dynamicTools"]

    def entry(method: str, params: str) -> dict[str, Any]:
        return {"properties": {"method": {"enum": [method]}, "params": {"$ref": f"#/definitions/{params}"}}}

    client = [entry("thread/start", "ThreadStartParams")] + ([] if drop_method else [entry("turn/start",
                                                                                         "TurnStartParams")])
    return ({"ClientRequest": {"oneOf": client}, "ServerNotification": {"oneOf": [entry("item/started",
                                                                                        "StartParams")]}}, defs)


def test_the_codex_diff_is_limited_to_used_methods_and_names_a_lost_one() -> None:
    old = codex_schema.used_protocol(*bundle())
    assert "def ThreadStartResponse received" in old and "def Item received" in old
    assert codex_schema.diff_protocol(old, old) == []
    gone = codex_schema.diff_protocol(old, codex_schema.used_protocol(*bundle(drop_method=True)))
    assert [(c.what, c.where, c.blocking) for c in gone if c.blocking] == [("removed", "turn/start", True)]
    assert codex_schema.from_json(codex_schema.to_json(old)) == old


def test_an_experimental_field_that_disappears_is_named() -> None:
    assert codex_schema.experimental_missing(codex_schema.used_protocol(*bundle())) == []
    missing = codex_schema.experimental_missing(codex_schema.used_protocol(*bundle(drop_field=True)))
    assert len(missing) == 1 and missing[0].startswith("thread/start dynamicTools (sent by ")
    after = {"protocol": codex_schema.to_json(codex_schema.used_protocol(*bundle(drop_field=True))),
             "experimentalMissing": missing}
    before = {"protocol": codex_schema.to_json(codex_schema.used_protocol(*bundle()))}
    assert shapes.verdict(diff_snapshots("codex-sdk", before, after), []).startswith(
        "not safe: removed def ThreadStartParams dynamicTools")


# ----- the SDK's command line, ACP answers, the verdict ------------------------------------------------------------
def test_argv_shapes_say_how_each_flag_takes_its_value() -> None:
    old = shapes.argv_shape(["--model", "m", "--verbose", "--resume", "s"])
    new = shapes.argv_shape(["--model=m", "--verbose", "--effort=high"])
    assert old == {"--model": "next", "--verbose": "alone", "--resume": "next"}
    assert [(c.line(), c.blocking) for c in shapes.diff_argv(old, new)] == [
        ("+ transport --effort: joined", False), ("- transport --resume: next", True),
        ("~ transport --model: next -> joined", False)]


def acp(modes: list[str], models: list[str], **caps: Any) -> dict[str, Any]:
    return {"acp": {"initialize": {"agentCapabilities": {"loadSession": True, **caps}},
                    "session/new": {"sessionId": "s", "modes": {"availableModes": [{"id": m} for m in modes]},
                                    "models": {"availableModels": [{"modelId": m} for m in models]}}}}


def test_acp_answers_compare_fields_and_the_ids_the_runner_uses() -> None:
    before = acp(["default", "yolo", "plan"], ["gemini-2.5-flash", "gemini-2.5-pro"])
    grown = acp(["default", "yolo", "plan", "autoEdit"], ["gemini-2.5-flash"], sessionCapabilities={})
    lines = report(diff_snapshots("gemini-cli", before, grown))
    assert lines == ["- session/new models.availableModels ids: gemini-2.5-pro",
                     "+ initialize agentCapabilities.sessionCapabilities: object",
                     "+ session/new modes.availableModes ids: autoEdit"]
    no_plan = diff_snapshots("gemini-cli", before, acp(["default", "yolo"], ["gemini-2.5-flash", "gemini-2.5-pro"]))
    assert shapes.verdict(no_plan, []) == ("not safe: removed session/new modes.availableModes ids "
                                           "(plan (the runner uses plan))")


def test_the_verdict_is_one_line() -> None:
    blocking = [Change("removed", f"def X f{i}", blocking=True) for i in range(5)]
    assert shapes.verdict([Change("added", "a")], []) == "safe"
    assert shapes.verdict([], ["make lint failed (exit 2)"]) == "not safe: make lint failed (exit 2)"
    assert shapes.verdict(blocking, []) == "not safe: removed def X f0; removed def X f1; removed def X f2 (and 2 more)"


# ----- the pins -------------------------------------------------------------------------------------------------------
def test_the_pins_move_in_both_python_files() -> None:
    lock = "boto3==1.44.5\nclaude-agent-sdk==0.2.189\nclick==8.5.1\n"
    pyproject = 'claude = ["claude-agent-sdk==0.2.189"]\ncodex-sdk = ["openai-codex==0.163.0"]\n'
    assert pins.set_lock_pin(lock, "claude-agent-sdk", "0.2.190") == lock.replace("0.2.189", "0.2.190")
    assert pins.set_pyproject_pin(pyproject, "claude_agent_sdk", "0.2.190") == pyproject.replace("0.2.189", "0.2.190")
    assert pins.lock_pins(lock)["claude-agent-sdk"] == "0.2.189"
    with pytest.raises(ValueError, match="pins openai-codex 0 times"):
        pins.set_lock_pin(lock, "openai-codex", "0.171.0")


def test_the_versions_table_is_rewritten_between_its_markers() -> None:
    every = {p.name: "1.0" for spec in pins.RUNNERS.values() for p in spec.packages}
    table = pins.versions_table(every, {"claude-agent-sdk": "2.1.337"})
    doc = f"# Runners\n\n{pins.VERSIONS_START}\nold\n{pins.VERSIONS_END}\n\nmore\n"
    assert pins.with_versions_table(doc, table) == f"# Runners\n\n{table}\n\nmore\n"
    row = "| `claude` | `claude-agent-sdk` (pypi) | `pyproject.toml`, `requirements.lock` | 1.0 | Claude Code 2.1.337 |"
    assert row in table.splitlines()


def test_the_newest_version_is_read_from_pip_index() -> None:
    answer = "claude-agent-sdk (0.2.190)\nAvailable versions: 0.2.190, 0.2.189\n"
    assert newest_from_pip_index(answer, "claude-agent-sdk") == "0.2.190"
