"""The platform page double (tests/support/platform_page.py) against small event lists whose outcome the platform's
TypeScript decides (event-handlers.ts, normalize-snapshot.ts, use-agent-status.ts, tool-message.tsx, agui_store.go);
each test names the rule it mirrors."""

from __future__ import annotations

import json
from typing import Any

from platform_page import (
    RANDOM,
    PlatformPage,
    backend_status,
    compact,
    comparable,
    has_actual_result,
    reload,
    structure,
)


def text(message_id: str, content: str) -> list[dict[str, Any]]:
    return [{"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
            *([{"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": content}] if content else []),
            {"type": "TEXT_MESSAGE_END", "messageId": message_id}]


def reasoning(message_id: str, content: str) -> list[dict[str, Any]]:
    return [{"type": "REASONING_START", "messageId": message_id},
            {"type": "REASONING_MESSAGE_START", "messageId": message_id, "role": "reasoning"},
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": message_id, "delta": content},
            {"type": "REASONING_MESSAGE_END", "messageId": message_id},
            {"type": "REASONING_END", "messageId": message_id}]


def call(call_id: str, name: str, args: dict[str, Any], parent: str | None = None) -> list[dict[str, Any]]:
    start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}
    if parent:
        start["parentMessageId"] = parent
    return [start, {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": json.dumps(args)},
            {"type": "TOOL_CALL_END", "toolCallId": call_id}]


def result(call_id: str, content: str) -> dict[str, Any]:
    return {"type": "TOOL_CALL_RESULT", "toolCallId": call_id, "messageId": f"{call_id}-result", "content": content,
            "role": "tool"}


def run(run_id: str, *body: list[dict[str, Any]] | dict[str, Any], snapshot: list[dict[str, Any]] | None = None,
        outcome: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id}]
    for part in body:
        events += part if isinstance(part, list) else [part]
    if snapshot is not None:
        events.append({"type": "MESSAGES_SNAPSHOT", "messages": snapshot})
    finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}
    if outcome:
        finished["outcome"] = outcome
    return [*events, finished]


def assistant(message_id: str, content: str | None = None, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"id": message_id, "role": "assistant"}
    if content is not None:
        message["content"] = content
    if calls:
        message["toolCalls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                                for i, n, a in calls]
    return message


# ----- handleToolCallEnd: where a tool call is held --------------------------------------------------------------
def test_a_call_without_parent_goes_on_the_last_assistant_message() -> None:
    page = PlatformPage().feed(run("r1", text("m1", "Let me look"), call("c1", "Bash", {"command": "ls"})))
    assert [(m["id"], [c["id"] for c in m.get("toolCalls") or ()]) for m in page.messages] == [("m1", ["c1"])]


def test_a_call_without_parent_after_reasoning_goes_on_the_reasoning_block() -> None:
    page = PlatformPage().feed(run("r1", reasoning("rs1", "thinking"), call("c1", "shell", {"command": "ls"})))
    (holder,) = page.messages
    assert holder["id"] == "rs1" and holder["content"]["type"] == "reasoning_block"
    assert [c["id"] for c in holder["toolCalls"]] == ["c1"]


def test_a_call_without_parent_skips_user_and_tool_messages_back_to_an_earlier_turn() -> None:
    page = PlatformPage().feed(run("r1", text("m1", "hello")))
    page.send("now list the files")
    page.feed(run("r2", call("c2", "Bash", {"command": "ls"})))
    assert [c["id"] for c in page.messages[0]["toolCalls"]] == ["c2"]  # the first turn's message holds it


def test_a_call_whose_parent_message_is_unknown_gets_a_standalone_tool_message() -> None:
    page = PlatformPage().feed(run("r1", call("c1", "shell", {"command": "ls"}, parent="c1-call"), result("c1", "a")))
    (holder,) = page.messages
    assert holder["role"] == "tool" and holder["id"].startswith(RANDOM) and holder["toolCallId"] == "c1"
    assert holder["toolCalls"][0]["result"] == "a"


def test_a_call_whose_parent_message_is_a_call_becomes_its_child() -> None:
    page = PlatformPage().feed(run("r1", text("m1", "go"), call("c1", "Task", {}), call("c2", "Read", {}, parent="c1")))
    calls = page.messages[0]["toolCalls"]
    assert [(c["id"], c.get("parentToolUseId")) for c in calls] == [("c1", None), ("c2", "c1")]
    (card,) = page.tool_cards()
    assert card["id"] == "c1" and [k["id"] for k in card["children"]] == ["c2"]


def test_text_without_content_is_never_committed_and_run_finished_flushes_open_text() -> None:
    events = run("r1", text("m0", ""), [{"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
                                        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "cut"}])
    page = PlatformPage().feed(events)
    assert [(m["id"], m["content"]) for m in page.messages] == [("m1", "cut")]


# ----- results: blank is pending -------------------------------------------------------------------------------
def test_a_blank_result_leaves_the_card_spinning() -> None:
    page = PlatformPage().feed(run("r1", text("m1", "run it"), call("c1", "run_shell_command", {}), result("c1", "")))
    (card,) = page.tool_cards()
    assert card["pending"]
    assert not any(has_actual_result(v) for v in ("", "   ", '""', "''", [], {}, None))
    assert has_actual_result("0 files")


# ----- the badge ---------------------------------------------------------------------------------------------------
def test_waiting_input_is_an_unanswered_ask_user_question_as_the_last_call_of_the_newest_holder() -> None:
    ask = call("q1", "AskUserQuestion", {"questions": [{"question": "Run it?", "options": [{"label": "Approve"}]}]})
    page = PlatformPage().feed(run("r1", text("m1", "may I?"), ask, outcome={"type": "interrupt", "interrupts": []}))
    assert page.status() == "waiting_input" and page.connection == "completed"  # the outcome is ignored
    assert page.open_question()["id"] == "q1"
    page.apply(result("q1", '{"answers": {"Run it?": "Approve"}}'))
    assert page.status() == "idle" and page.open_question() is None


def test_an_ask_user_question_that_is_not_the_last_call_does_not_wait() -> None:
    page = PlatformPage().feed(run("r1", text("m1", "x"), call("q1", "ask_user_question", {}), call("c2", "Bash", {})))
    assert page.status() == "idle"
    assert PlatformPage().feed(run("r2", text("m1", "x"), call("q1", "ask_user_question", {}))).status() == \
        "waiting_input"  # the name is matched on its letters only


def test_the_badge_is_working_during_a_run() -> None:
    page = PlatformPage()
    page.apply({"type": "RUN_STARTED", "threadId": "t", "runId": "r1"})
    assert page.status() == "working" and page.status("Completed") == "completed" and page.status("Pending") == "idle"


def test_an_answer_to_a_card_is_hidden_from_the_chat() -> None:
    ask = call("q1", "AskUserQuestion", {"questions": [{"question": "Run it?", "options": [{"label": "Approve"}]}]})
    page = PlatformPage().feed(run("r1", text("m1", "may I?"), ask))
    sent = page.answer_card({"Run it?": "Approve"})
    assert sent["metadata"] == {"type": "ask_user_question_response"}
    assert json.loads(sent["content"]) == {"questions": [{"question": "Run it?", "options": [{"label": "Approve"}]}],
                                           "answers": {"Run it?": "Approve"}}
    assert [item["kind"] for item in page.rendered()] == ["text", "tool"]


# ----- MESSAGES_SNAPSHOT -----------------------------------------------------------------------------------------
def test_a_snapshot_nests_tool_results_and_drops_standalone_tool_messages_it_holds() -> None:
    snapshot = [{"id": "u1", "role": "user", "content": "go"}, assistant("c1-call", None, ("c1", "shell", {})),
                {"id": "c1-result", "role": "tool", "toolCallId": "c1", "content": "out"}]
    page = PlatformPage()
    page.send("go")
    page.messages[0]["id"] = "u1"
    page.feed(run("r1", call("c1", "shell", {}, parent="c1-call"), result("c1", "out"), snapshot=snapshot))
    assert [(m["id"], m["role"]) for m in page.messages] == [("u1", "user"), ("c1-call", "assistant")]
    assert page.messages[1]["toolCalls"][0]["result"] == "out"


def test_a_snapshot_replaces_a_live_reasoning_block_and_drops_the_calls_it_held() -> None:
    """The Codex bug of issue 30: the call held by a reasoning block is gone once the snapshot's reasoning message
    (which holds no calls) replaces it, and a holder the stream never named is added."""
    snapshot = [{"id": "rs1", "role": "reasoning", "content": "thinking"}, assistant("c1-call", None, ("c1", "x", {}))]
    live = PlatformPage().feed(run("r1", reasoning("rs1", "thinking"), call("c1", "x", {}), snapshot=snapshot))
    assert [(m["id"], m["role"], len(m.get("toolCalls") or ())) for m in live.messages] == [
        ("rs1", "reasoning", 0), ("c1-call", "assistant", 1)]
    before_snapshot = PlatformPage().feed(run("r1", reasoning("rs1", "thinking"), call("c1", "x", {})))
    assert [m["id"] for m in before_snapshot.messages] == ["rs1"]


def test_a_snapshot_keeps_streamed_names_and_arguments_and_sorts_by_time() -> None:
    page = PlatformPage().feed(run("r1", text("m1", "a"), call("c1", "Read", {"p": 1})))
    page.apply({"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": "m0", "role": "user", "content": "first", "timestamp": "2025-01-01T00:00:01Z"},
        {**assistant("m1", "a"), "toolCalls": [{"id": "c1", "type": "function",
                                                "function": {"name": "tool", "arguments": ""}}]}]})
    assert [m["id"] for m in page.messages] == ["m0", "m1"]
    assert page.messages[1]["toolCalls"][0]["function"] == {"name": "Read", "arguments": '{"p": 1}'}


# ----- the backend: compaction, reload, status ----------------------------------------------------------------------
def test_compaction_keeps_lifecycle_snapshots_and_ask_user_question_starts_only() -> None:
    ask = call("q1", "AskUserQuestion", {"questions": []})
    stored = run("r1", text("m1", "hi"), call("c1", "Bash", {}), ask, {"type": "CUSTOM", "name": "x", "value": {}},
                 snapshot=[assistant("m1", "hi", ("c1", "Bash", {}), ("q1", "AskUserQuestion", {"questions": []}))])
    assert [e["type"] for e in compact(stored)] == ["RUN_STARTED", "TOOL_CALL_START", "CUSTOM", "MESSAGES_SNAPSHOT",
                                                    "RUN_FINISHED"]
    assert compact(stored[:-2]) == stored[:-2]  # no snapshot: the raw events are kept
    page = reload(stored)
    assert page.status() == "waiting_input" and [m["id"] for m in page.messages] == ["m1"]
    assert comparable(page.messages) == comparable(PlatformPage().feed(stored).messages)


def test_backend_status_reads_the_newest_run() -> None:
    ask = {"type": "TOOL_CALL_START", "toolCallId": "q1", "toolCallName": "AskUserQuestion"}
    assert backend_status(run("r1", ask)) == "waiting_input"
    assert backend_status(run("r1", ask) + run("r2", text("m", "x"))) == "idle"
    assert backend_status(run("r1")[:1]) == "working"
    assert backend_status([]) == ""


def test_a_raw_event_with_a_role_and_a_content_is_a_message():
    """handleRawEvent: a payload with a truthy role and content becomes a message of its id, ``String(content)``;
    an empty list is truthy, "" is not; a hidden message's metadata takes it off the page and out of snapshots."""
    page = PlatformPage().feed([
        {"type": "RAW", "event": {"id": "c1-call", "role": "assistant", "content": []}},
        {"type": "RAW", "event": {"id": "nothing", "role": "assistant", "content": ""}},
        {"type": "RAW", "event": {"type": "langfuse_trace", "traceId": "ab"}},
        *call("c1", "shell", {"command": "ls"}, parent="c1-call"),
        {"type": "RAW", "event": {"role": "tool", "content": "?"}},  # no id: the page's own
    ])
    assert structure(page.messages) == [("c1-call", ["c1"]), (RANDOM, [])]
    assert page.messages[0]["content"] == "" and page.messages[1]["content"] == "?"
    page.feed([{"type": "RAW", "event": {"type": "message_metadata", "hidden": True, "messageId": "c1-call"}},
               {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "c1-call", "role": "assistant", "content": "x"}]}])
    assert structure(page.messages) == [(RANDOM, [])]


def test_a_call_whose_holder_the_page_has_not_is_a_message_of_its_own():
    """handleToolCallEnd: a parentMessageId naming no message puts the call in a role "tool" message with a random
    id; the snapshot's holder then takes its place (what the announced holder avoids)."""
    page = PlatformPage().feed(call("c1", "shell", {}, parent="c1-call"))
    assert structure(page.messages) == [(RANDOM, ["c1"])]
    page.apply({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "c1-call", "role": "assistant", "toolCalls": [
        {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]}]})
    assert structure(page.messages) == [("c1-call", ["c1"])]

