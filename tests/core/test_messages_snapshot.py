"""``MESSAGES_SNAPSHOT`` before every terminal event holds the thread's whole conversation: every run's user
messages (with their metadata), assistant text, tool calls and tool results, under the ids they were streamed
with, bounded in size without dropping a message."""

from __future__ import annotations

import json
import random

import pytest
from ag_ui.core import (
    RunAgentInput,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)
from harness import RunnerHarness, parse_sse
from media import data_part, png
from process_bridge import FakeCliBridge, script

from ambient_runner.stream.conversation import CUT_TO, SNAPSHOT_LIMIT, Conversation
from ambient_runner.stream.encoding import Redactor, event_json


def emit(**event) -> dict:
    return {"emit": event}


@pytest.fixture
def bridge(tmp_path):
    return FakeCliBridge(tmp_path)


async def post(runner: RunnerHarness, body: dict) -> list[dict]:
    async with runner.client.stream("POST", "/run", json=body) as response:
        assert response.status_code == 200
        events = [event async for _, event in parse_sse(response.aiter_lines())]
    return runner.checked(body["threadId"], events)


async def test_the_snapshot_holds_every_run_of_the_thread(bridge):
    first = script(
        emit(type="TEXT_MESSAGE_START", messageId="a1", role="assistant"),
        emit(type="TEXT_MESSAGE_CONTENT", messageId="a1", delta="Let me look."),
        emit(type="TOOL_CALL_START", toolCallId="c1", toolCallName="shell", parentMessageId="a1"),
        emit(type="TOOL_CALL_ARGS", toolCallId="c1", delta='{"cmd": "ls"}'),
        emit(type="TOOL_CALL_END", toolCallId="c1"),
        emit(type="TOOL_CALL_RESULT", messageId="r1", toolCallId="c1", content="README.md"),
        emit(type="TEXT_MESSAGE_START", messageId="a2", role="assistant"),
        emit(type="TEXT_MESSAGE_CONTENT", messageId="a2", delta="There is a README."),
        emit(type="TEXT_MESSAGE_END", messageId="a2"))
    second = script(emit(type="TEXT_MESSAGE_START", messageId="a3", role="assistant"),
                    emit(type="TEXT_MESSAGE_CONTENT", messageId="a3", delta="Done."))
    async with RunnerHarness(bridge) as runner:
        one = await post(runner, {"threadId": "t1", "messages": [{"id": "u1", "role": "user", "content": first}]})
        # The client sends its history (the snapshot) again with the new message: known ids are not repeated.
        history = [*one[-2]["messages"], {"id": "u2", "role": "user", "content": second, "metadata": {"hidden": True}}]
        two = await post(runner, {"threadId": "t1", "messages": history})
    assert [e["type"] for e in one[-2:]] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert [e["type"] for e in two[-2:]] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert two[-2]["messages"] == [
        {"id": "u1", "role": "user", "content": first},
        {"id": "a1", "role": "assistant", "content": "Let me look.", "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "ls"}'}}]},
        {"id": "r1", "role": "tool", "content": "README.md", "toolCallId": "c1"},
        {"id": "a2", "role": "assistant", "content": "There is a README."},
        {"id": "u2", "role": "user", "content": second, "metadata": {"hidden": True}},
        {"id": "a3", "role": "assistant", "content": "Done."},
    ]
    assert one[-2]["messages"] == two[-2]["messages"][:4]


async def test_errors_and_cancels_end_with_a_snapshot_too(bridge):
    async with RunnerHarness(bridge) as runner:
        failed = await runner.run("t1", script(emit(type="TEXT_MESSAGE_START", messageId="m", role="assistant"),
                                               emit(type="TEXT_MESSAGE_CONTENT", messageId="m", delta="partial"),
                                               {"exit": 3}))
    assert [e["type"] for e in failed[-2:]] == ["MESSAGES_SNAPSHOT", "RUN_ERROR"]
    assert failed[-2]["messages"][-1] == {"id": "m", "role": "assistant", "content": "partial"}


async def test_a_huge_tool_result_is_cut_in_the_snapshot_never_dropped(tmp_path):
    bridge = FakeCliBridge(tmp_path, max_line_bytes=32 * 1024 * 1024)
    huge = "x" * (12 * 1024 * 1024)
    async with RunnerHarness(bridge) as runner:
        events = await runner.run("t1", script(
            emit(type="TOOL_CALL_START", toolCallId="c1", toolCallName="shell"),
            emit(type="TOOL_CALL_END", toolCallId="c1"),
            emit(type="TOOL_CALL_RESULT", messageId="r1", toolCallId="c1", content=huge)))
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == huge  # streamed whole
    snapshot = events[-2]
    assert len(json.dumps(snapshot).encode()) <= SNAPSHOT_LIMIT + 1024
    tool = snapshot["messages"][-1]
    assert tool["id"] == "r1" and tool["content"].startswith("xxxx") and "characters cut" in tool["content"]
    assert [m["role"] for m in snapshot["messages"]] == ["user", "assistant", "tool"]


def test_a_secret_across_the_cut_of_a_huge_result_keeps_none_of_it():
    """A content cut to fit the snapshot is redacted before the cut: a secret lying across the cut would otherwise
    keep its start, which no redaction of the cut text can recognise."""
    secret = "zq9X-never-in-a-snapshot-7731"
    conversation = Conversation()
    conversation.add_input(RunAgentInput(thread_id="t", run_id="r", state={}, tools=[], context=[], forwarded_props={},
                                         messages=[UserMessage(id="u1", role="user", content="hi")]))
    for event in (ToolCallStartEvent(tool_call_id="c1", tool_call_name="shell", parent_message_id="a1"),
                  ToolCallEndEvent(tool_call_id="c1"),
                  ToolCallResultEvent(message_id="r1", tool_call_id="c1",
                                      content="a" * (CUT_TO - 5) + secret + "b" * (9 * 1024 * 1024))):
        conversation.add_event(event)
    snapshot = json.loads(conversation.snapshot_json(Redactor([secret])))
    tool = snapshot["messages"][-1]
    assert "characters cut" in tool["content"] and len(tool["content"]) < CUT_TO + 200
    assert secret[:5] not in tool["content"]


async def test_a_huge_image_is_left_out_of_the_snapshot_as_a_note_never_dropped(tmp_path):
    bridge = FakeCliBridge(tmp_path)
    image = png(width=8, height=8) + b"\0" * (9 * 1024 * 1024)  # a PNG signature, then padding: 9 MiB
    parts = [{"type": "text", "text": script({"text": "seen"})}, data_part("image", "image/png", image)]
    async with RunnerHarness(bridge) as runner:
        events = await runner.run("t1", parts)
    snapshot = events[-2]
    assert len(json.dumps(snapshot).encode()) <= SNAPSHOT_LIMIT + 1024
    user = snapshot["messages"][0]
    assert user["content"][0] == parts[0]
    assert user["content"][1] == {"type": "text", "text": f"[image/png image of {len(image)} bytes left out of "
                                                          "this snapshot; it was sent with its run]"}
    assert [m["role"] for m in snapshot["messages"]] == ["user", "assistant"]


def test_a_snapshot_after_every_event_equals_one_built_from_scratch():
    """The conversation keeps each message as its last snapshot validated it, until the message changes: a snapshot
    taken after any event must equal the one a new conversation builds from the same input and events (a message that
    changes after a snapshot, by later text, a call it holds, or that call's arguments, is never shown stale)."""
    run_input = RunAgentInput(thread_id="t", run_id="r", state={}, tools=[], context=[], forwarded_props={},
                              messages=[UserMessage(id="u1", role="user", content="hello")])
    events = [
        TextMessageStartEvent(message_id="a1", role="assistant"),
        TextMessageContentEvent(message_id="a1", delta="Let me "),
        TextMessageEndEvent(message_id="a1"),
        TextMessageContentEvent(message_id="a1", delta="look."),  # more text for a message already joined
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="shell", parent_message_id="a1"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"cmd": '),
        ToolCallEndEvent(tool_call_id="c1"),
        ToolCallArgsEvent(tool_call_id="c1", delta='"ls"}'),  # arguments after the call's end
        ToolCallResultEvent(message_id="r1", tool_call_id="c1", content="README.md"),
        ToolCallStartEvent(tool_call_id="c2", tool_call_name="shell", parent_message_id="a1"),
        ToolCallArgsEvent(tool_call_id="c2", delta="{}"),
        ToolCallEndEvent(tool_call_id="c2"),
        TextMessageStartEvent(message_id="a2", role="assistant"),
        TextMessageContentEvent(message_id="a2", delta="Done."),
    ]
    kept = Conversation()
    kept.add_input(run_input)
    for count, event in enumerate(events, 1):
        kept.add_event(event)
        fresh = Conversation()
        fresh.add_input(run_input)
        for earlier in events[:count]:
            fresh.add_event(earlier)
        assert kept.snapshot().model_dump(by_alias=True) == fresh.snapshot().model_dump(by_alias=True), count
        # its wire JSON, each unchanged message's part kept from the run before: what the encoder writes
        assert kept.snapshot_json(Redactor()) == event_json(fresh.snapshot(), Redactor()), count
    final = kept.snapshot().model_dump(by_alias=True, exclude_none=True)["messages"]
    assert final[1]["content"] == "Let me look."
    assert final[1]["toolCalls"][0]["function"]["arguments"] == '{"cmd": "ls"}'
    assert [c["id"] for c in final[1]["toolCalls"]] == ["c1", "c2"]


@pytest.mark.parametrize(("seam_secret", "key_turn"), [(None, None), (None, 25), ('msg-tail"},{"id":"', None)],
                         ids=["item-by-item", "a-private-key-cut-short", "a-secret-holds-a-seam"])
def test_a_kept_snapshot_is_redacted_as_the_whole_snapshot_would_be(seam_secret, key_turn):
    """The snapshot is a join of each message's part, redacted once and kept while the message and the redactor's
    secrets stay the same: after any event, any new secret and any new redactor it must equal the whole snapshot
    built from scratch and redacted in one piece. Contents mix secrets, token shapes and URLs with passwords; from
    ``key_turn`` on, a private key block cut short (its redaction runs on into the next messages) and its end; with
    ``seam_secret`` known halfway, a secret that matches across the seam between two messages."""
    later_secrets = ["later-secret-1", "rotated-token-99", "third-secret"]
    pieces = ["plain words ", "later-secret-1", "rotated-token-99", "third-secret", "ghp_" + "a" * 36,
              "https://bob:hunter2@git.example/r", "msg-tail", "Authorization: Bearer abcdefgh12345",
              "sk-" + "b" * 40, " ", "\n", "{}", "],[", "},{"]
    key_pieces = ["-----BEGIN RSA PRIVATE KEY-----\nMIIEow", "-----END RSA PRIVATE KEY-----"]
    chooser = random.Random(35)

    def text() -> str:
        return "".join(chooser.choice(pieces) for _ in range(chooser.randint(1, 4)))

    def run_input(turn: int) -> RunAgentInput:
        return RunAgentInput(thread_id="t", run_id=f"r{turn}", state={}, tools=[], context=[], forwarded_props={},
                             messages=[UserMessage(id=f"u{turn}", role="user",  # the seam secret's start
                                                   content=text() + ("msg-tail" if turn % 5 == 0 else ""))])

    kept = Conversation()
    history: list[tuple[str, object]] = []
    redactor = Redactor(["first-secret"])
    compared = 0
    for turn in range(40):
        if turn == key_turn:
            pieces += key_pieces
        steps: list[tuple[str, object]] = [("input", run_input(turn))]
        steps += [("event", TextMessageStartEvent(message_id=f"a{turn}", role="assistant")),
                  ("event", TextMessageContentEvent(message_id=f"a{turn}", delta=text()))]
        if turn % 3 == 0:
            steps += [("event", ToolCallStartEvent(tool_call_id=f"c{turn}", tool_call_name="shell",
                                                   parent_message_id=f"a{turn}")),
                      ("event", ToolCallArgsEvent(tool_call_id=f"c{turn}", delta=json.dumps({"cmd": text()}))),
                      ("event", ToolCallEndEvent(tool_call_id=f"c{turn}")),
                      ("event", ToolCallResultEvent(message_id=f"r{turn}", tool_call_id=f"c{turn}", content=text()))]
        steps += [("event", TextMessageEndEvent(message_id=f"a{turn}"))]
        if turn % 4 == 1 and turn > 1:  # a message of an earlier turn changes (more text joins it)
            steps += [("event", TextMessageContentEvent(message_id=f"a{turn - 2}", delta=text()))]
        if turn == 20 and seam_secret:
            redactor.extend([seam_secret])
        for step in steps:
            history.append(step)
            kind, item = step
            kept.add_input(item) if kind == "input" else kept.add_event(item)  # type: ignore[arg-type]
            if chooser.random() < 0.5:
                continue
            if chooser.random() < 0.1:  # a secret becomes known
                redactor.extend([chooser.choice(later_secrets)])
            if chooser.random() < 0.03:  # the redactor is replaced (the bridge's credentials are known)
                redactor = Redactor([chooser.choice(later_secrets), "first-secret",
                                     *([seam_secret] if seam_secret and turn >= 20 else [])])
            fresh = Conversation()
            for kind, item in history:
                fresh.add_input(item) if kind == "input" else fresh.add_event(item)  # type: ignore[arg-type]
            whole = redactor(fresh.snapshot().model_dump_json(by_alias=True, exclude_none=True))
            assert kept.snapshot_json(redactor) == whole, (turn, step)
            compared += 1
    assert compared > 100
    assert "hunter2" not in kept.snapshot_json(redactor)
