"""A plan-mode turn whose write was refused finishes the run on every Claude Code version recorded: 2.1.332
(``result.is_error: false``) and 2.1.337 (``is_error: true``, subtype ``success``, an ``errors`` entry tagged
``[auto_mode_unchecked]`` per refusal, the refused calls in ``permission_denials``). Any other error result stays a
RUN_ERROR.

The streams: ``tests/fixtures/claude/<Claude Code version>/plan_refused.jsonl`` (kept as recorded, never
re-recorded) and ``tests/fixtures/claude/plan_refused.jsonl`` (re-recorded with the pinned CLI by
``tests/fixtures/record_claude.py plan_refused``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from events import run_error, wire_all

from ag_ui_claude import translate

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude"
KEPT = {"2.1.332": FIXTURES / "2.1.332" / "plan_refused.jsonl", "2.1.337": FIXTURES / "2.1.337" / "plan_refused.jsonl"}
RECORDINGS = {**{f"claude-code-{v}": path for v, path in KEPT.items()}, "pinned": FIXTURES / "plan_refused.jsonl"}
ANSWER = ["I will run a shell command.", "Understood: that did not run. Tell me what to do instead."]
REFUSED = "Tool error: Auto mode is unavailable: its safety check does not run for this session, so Bash was not run."


def recorded(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def result_line(raw: list[dict[str, Any]]) -> dict[str, Any]:
    return next(line for line in raw if line.get("type") == "result")


def with_result(raw: list[dict[str, Any]], **fields: Any) -> list[dict[str, Any]]:
    """The recorded stream with its result message changed."""
    changed = copy.deepcopy(raw)
    result_line(changed).update(fields)
    return changed


def texts(events: list[dict[str, Any]]) -> list[str]:
    """Each assistant text message of the run, whole."""
    out: dict[str, str] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            out[event["messageId"]] = out.get(event["messageId"], "") + event["delta"]
    return list(out.values())


def test_the_two_versions_report_the_same_refusal_differently() -> None:
    """What the kept recordings are: the test below covers the new report, not only the old one."""
    old, new = (result_line(recorded(KEPT[v])) for v in ("2.1.332", "2.1.337"))
    assert (old["subtype"], old["is_error"], old.get("errors")) == ("success", False, None)
    assert (new["subtype"], new["is_error"]) == ("success", True)
    assert [e.endswith("[auto_mode_unchecked]") for e in new["errors"]] == [True]
    assert [(d["tool_name"], d.get("auto_mode_unchecked")) for d in new["permission_denials"]] == [
        ("Bash", "no_check_in_session")]
    assert [d["tool_name"] for d in old["permission_denials"]] == ["Bash"]


@pytest.mark.parametrize("recording", list(RECORDINGS))
def test_a_refused_write_in_plan_mode_finishes_the_run(recording: str) -> None:
    raw = recorded(RECORDINGS[recording])
    events = wire_all(translate(raw))
    assert [e["type"] for e in events if e["type"].startswith("RUN_")] == ["RUN_FINISHED"]
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["result"]["numTurns"] == 2
    assert texts(events) == ANSWER  # what the CLI said about the refusal is the run's text
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert len(results) == 1 and results[0].startswith(REFUSED)


def test_both_versions_give_the_same_events() -> None:
    def shape(path: Path) -> list[tuple[str, ...]]:
        return [(e["type"], e.get("toolCallName", ""), e.get("delta", "") if e["type"] != "TOOL_CALL_ARGS" else "")
                for e in wire_all(translate(recorded(path)))]

    assert shape(KEPT["2.1.332"]) == shape(KEPT["2.1.337"])


NEW = "2.1.337"
OTHER_ERRORS = {  # an error result that is not only plan-mode refusals -> its RUN_ERROR
    "an error that is not a refusal": (
        {"errors": ["Something broke"]},
        run_error("AGENT_ERROR", "Claude Code failed during the turn: Understood: that did not run. Tell me what to do "
                                 "instead.")),
    "a refusal and another error": (
        {"errors": ["Auto mode could not check some actions Claude tried, so they did not run: Bash. To run them, use "
                    "another permission mode. [auto_mode_unchecked]", "Something broke"]},
        run_error("AGENT_ERROR", "Claude Code failed during the turn: Understood: that did not run. Tell me what to do "
                                 "instead.")),
    "a refusal of a call the denials do not list": (
        {"errors": ["Auto mode could not check some actions Claude tried, so they did not run: Write. To run them, use "
                    "another permission mode. [auto_mode_unchecked]"]},
        run_error("AGENT_ERROR", "Claude Code failed during the turn: Understood: that did not run. Tell me what to do "
                                 "instead.")),
    "a refusal with no denials": (
        {"permission_denials": []},
        run_error("AGENT_ERROR", "Claude Code failed during the turn: Understood: that did not run. Tell me what to do "
                                 "instead.")),
    "an API error beside the refusal": (
        {"api_error_status": 500, "result": "API Error: 500"},
        run_error("PROVIDER_ERROR", "The Anthropic API had a server error (HTTP 500). This is usually temporary: try "
                                    "again in a moment. Claude Code said: API Error: 500")),
    "the turn did not succeed": (
        {"subtype": "error_max_turns"},
        run_error("MAX_TURNS", "Claude stopped after reaching the maximum number of turns (2).")),
}


@pytest.mark.parametrize("case", list(OTHER_ERRORS))
def test_any_other_error_result_stays_a_run_error(case: str) -> None:
    fields, expected = OTHER_ERRORS[case]
    events = wire_all(translate(with_result(recorded(KEPT[NEW]), **fields)))
    assert [e for e in events if e["type"].startswith("RUN_")] == [expected]
    assert events[-1] == expected


def test_an_error_result_without_the_refusal_tag_is_still_an_error_on_the_old_version() -> None:
    events = wire_all(translate(with_result(recorded(KEPT["2.1.332"]), is_error=True)))
    assert events[-1] == run_error("AGENT_ERROR", "Claude Code failed during the turn: Understood: that did not run. "
                                                  "Tell me what to do instead.")
