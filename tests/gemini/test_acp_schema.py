"""The ACP models (``ag_ui_gemini_cli.acp_schema``) on the streams ``gemini --acp`` 0.61 really sent
(tests/fixtures/gemini_acp, recorded with ../shared/research/acp-probe), and the runner's channel and live CLI on
what does not fit them: a peer process (a small Python script playing the agent) prints the lines."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ag_ui_gemini_cli.acp_schema import (
    UPDATE,
    CommandsUpdate,
    ContentBlock,
    EmptyResult,
    InitializeResult,
    JsonRpcMessage,
    LoadSessionResult,
    MessageChunk,
    NewSessionResult,
    OtherUpdate,
    PromptResult,
    RequestPermissionParams,
    SetModeParams,
    ToolCallUpdate,
    UpdateNotification,
    parse_message,
    received,
    wire,
)
from ambient_runner.bridges.acp_client.approvals import reply
from ambient_runner.bridges.acp_client.connection import AcpClosed, AcpError
from ambient_runner.bridges.acp_client.live import CliCommand, LiveAgent
from ambient_runner.bridges.gemini_cli.acp import GEMINI
from ambient_runner.interrupts.book import Answer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini_acp"
TYPED = {"agent_message_chunk": MessageChunk, "agent_thought_chunk": MessageChunk, "tool_call": ToolCallUpdate,
         "tool_call_update": ToolCallUpdate, "available_commands_update": CommandsUpdate}


def lines() -> list[str]:
    found = [line for path in sorted(FIXTURES.glob("*.stdout.jsonl")) for line in path.read_text().splitlines()]
    assert len(found) > 80
    return found


def recorded() -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines()]


def test_every_recorded_message_parses_whole() -> None:
    """Every line the CLI printed is JSON-RPC; every update, permission request and result fits its model with
    nothing left undeclared, and comes back as it arrived."""
    kinds = set()
    for line in lines():
        message, parsed = json.loads(line), parse_message(line)
        assert received(parsed) == message
        if parsed.method == "session/update":
            assert isinstance(parsed, UpdateNotification)  # the one-pass path: every update the CLI wrote
            update = parsed.params.update
            kinds.add(update.session_update)
            assert type(update) is TYPED[update.session_update]
            assert not update.model_extra, update.model_extra
            assert received(update) == message["params"]["update"]
        elif parsed.method == "session/request_permission":
            request = RequestPermissionParams.model_validate(parsed.params)
            assert request.tool_call.tool_call_id and request.options and not request.model_extra
            assert received(request) == message["params"]
        elif isinstance(parsed, JsonRpcMessage) and "stopReason" in parsed.result_object():
            result = PromptResult.model_validate(parsed.result_object())
            assert received(result) == message["result"]
    assert kinds == set(TYPED)


def test_gemini_extensions_are_kept() -> None:
    """``models`` in the session/new and session/load results (dropped by the PyPI package's models)."""
    new = next(m["result"] for m in recorded() if "sessionId" in (m.get("result") or {}))
    session = NewSessionResult.model_validate(new)
    assert session.models is not None and session.models.current_model_id == "gemini-2.5-flash"
    assert session.models.available_models and session.modes and session.modes.current_mode_id
    assert LoadSessionResult.model_validate({k: v for k, v in new.items() if k != "sessionId"}).models == (
        session.models)
    init = InitializeResult.model_validate(next(m["result"] for m in recorded()
                                                if "protocolVersion" in (m.get("result") or {})))
    assert init.agent_info is not None and init.agent_info.name == "gemini-cli"
    usage = next(PromptResult.model_validate(m["result"]) for m in recorded()
                 if "_meta" in (m.get("result") or {}))
    assert usage.meta and usage.meta.quota and usage.meta.quota.token_count is not None


def test_unknown_kinds_keep_their_fields() -> None:
    update = UPDATE.validate_python({"sessionUpdate": "plan", "entries": [{"content": "step", "status": "pending"}]})
    assert type(update) is OtherUpdate
    assert received(update) == {"sessionUpdate": "plan", "entries": [{"content": "step", "status": "pending"}]}
    added = UPDATE.validate_python({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"},
                                    "later": 1})
    assert type(added) is MessageChunk and added.model_extra == {"later": 1}
    unfit = UPDATE.validate_python({"sessionUpdate": "agent_message_chunk", "content": "not an object"})
    assert type(unfit) is OtherUpdate and received(unfit) == {"sessionUpdate": "agent_message_chunk",
                                                              "content": "not an object"}


def test_what_the_runner_sends() -> None:
    assert wire(ContentBlock(type="image", mime_type="image/png", data="AA==")) == {
        "type": "image", "mimeType": "image/png", "data": "AA=="}
    request = RequestPermissionParams.model_validate({"sessionId": "s", "options": [
        {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"}], "toolCall": {"toolCallId": "t"}})
    assert wire(reply(Answer(approved=True), request)) == {"outcome": {"outcome": "selected",
                                                                       "optionId": "proceed_once"}}
    assert wire(reply(Answer(approved=False), request)) == {"outcome": {"outcome": "selected", "optionId": "no"}}
    assert wire(reply(Answer(approved=False, stop_turn=True), request)) == {"outcome": {"outcome": "cancelled"}}


@pytest.mark.parametrize("line", ['{"jsonrpc":"1.0","id":1,"result":{}}', "[1]", "Please visit the following URL",
                                  '{"jsonrpc":"2.0","id":{"a":1},"method":"x"}'])
def test_a_line_that_is_not_json_rpc_is_refused(line: str) -> None:
    with pytest.raises(ValueError):
        parse_message(line)


# ----- the channel and the live CLI on a peer that prints what it is given ---------------------------------------
PEER = r"""
import json, sys
script = json.loads(sys.argv[1])
for line in sys.stdin:
    message = json.loads(line)
    for out in script.get(message.get("method"), []):
        sys.stdout.write(out.replace('"ID"', json.dumps(message.get("id"))) + "\n")
    sys.stdout.flush()
"""
INIT = '{"jsonrpc":"2.0","id":"ID","result":{"protocolVersion":1,"agentInfo":{"name":"peer"}}}'


def peer(tmp_path: Path, script: dict[str, list[str]]) -> LiveAgent:
    script.setdefault("initialize", [INIT])
    argv = [sys.executable, "-c", PEER, json.dumps(script)]
    return LiveAgent(lambda: CliCommand(argv=argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}), GEMINI)


async def test_updates_that_are_not_objects_are_dropped_and_the_rest_arrive_typed(tmp_path: Path) -> None:
    update = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":%s}}'
    live = peer(tmp_path, {"session/new": [
        update % '{"sessionUpdate":"agent_message_chunk","content":"not an object"}',
        update % '"not an object"',
        update % '{"sessionUpdate":"usage_update","used":5}',
        update % '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}',
        '{"params":{"update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"t"}},'
        '"sessionId":"s"},"method":"session/update","jsonrpc":"2.0"}',
        '{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","options":"no"}}',
        '{"jsonrpc":"2.0","id":"ID","result":{"sessionId":"s","models":{"currentModelId":"m"}}}']})
    got: list[tuple[Any, ...]] = []
    live.route("s", got.append)
    try:
        session = await live.new_session(tmp_path)
        assert (session.id, session.model) == ("s", "m")
        assert [(kind, type(update)) for kind, update in got] == [
            ("update", OtherUpdate), ("update", OtherUpdate), ("update", MessageChunk), ("update", MessageChunk)]
        assert [got[2][1].text, got[3][1].text] == ["hi", "t"]  # the last in another key order: typed too
        assert live.agent_info is not None and live.agent_info.name == "peer"
        assert live.alive  # nothing of that stopped the channel
    finally:
        await live.close()


async def test_a_reply_that_does_not_fit_is_an_acp_error_naming_it(tmp_path: Path) -> None:
    live = peer(tmp_path, {"session/new": ['{"jsonrpc":"2.0","id":"ID","result":{"models":{}}}']})
    try:
        with pytest.raises(AcpError) as caught:
            await live.new_session(tmp_path)
        assert "session/new: the Gemini CLI's reply does not fit ACP (sessionId: Field required)" in str(caught.value)
        assert live.alive
    finally:
        await live.close()


async def test_output_that_is_not_acp_stops_the_cli_with_a_protocol_error(tmp_path: Path) -> None:
    live = peer(tmp_path, {"session/new": ["Please visit the following URL to authorize"]})
    try:
        with pytest.raises(AcpClosed) as caught:
            await live.new_session(tmp_path)
        assert caught.value.code == "CLI_PROTOCOL_ERROR"
        assert "'Please visit the following URL to authorize'" in caught.value.message
    finally:
        await live.close()


def test_a_message_without_params_reads_as_empty() -> None:
    message = parse_message('{"jsonrpc":"2.0","method":"session/update","params":[1]}')
    assert isinstance(message, JsonRpcMessage) and message.params_object() == {} and not message.is_request


async def test_a_lone_surrogate_is_sent_escaped(tmp_path: Path) -> None:
    """A prompt may carry one (JSON allows "\\ud800"): it reaches the CLI escaped, never fails the send."""
    live = peer(tmp_path, {"session/set_mode": ['{"jsonrpc":"2.0","id":"ID","result":{}}']})
    try:
        connection = await live.connection()
        assert await connection.request("session/set_mode", SetModeParams(session_id="s", mode_id="a\ud800b"),
                                        EmptyResult) == EmptyResult()
    finally:
        await live.close()
