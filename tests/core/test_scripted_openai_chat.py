"""The scripted OpenAI Chat Completions server, over real HTTP: the script's words behave as on the other scripted
APIs (a shell call, its final answer, NOTOOL, THINK, BARECALL, a refusal, MCPTOOL, the failure modes), the stream is
``chat.completion.chunk``s whose ``tool_calls`` deltas put together make the call (read here with a parser written
as OpenAI's clients read a stream: the ``openai`` package is not in the test environment), usage comes last when
``stream_options.include_usage`` asks for it, and a non-streaming request gets the same answer in one body.
The tool and its arguments follow what the request offers (opencode's ``bash``, Qwen Code's ``run_shell_command``
with its required ``is_background``, Codex-style ``exec_command``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from ambient_runner.scripted_models.base import FINAL_ANSWER, PLAIN_ANSWER, REFUSAL_NOTE, REFUSED_ANSWER
from ambient_runner.scripted_models.openai_chat import OpenAIChatServer

WRITE = "Create out.txt with hello"


def function(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": name, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


STRING, FLAG = {"type": "string"}, {"type": "boolean"}
OPENCODE_BASH = function("bash", {"command": STRING, "timeout": {"type": "number"}, "description": STRING},
                         ["command", "description"])
OPENCODE_READ = function("read", {"filePath": STRING, "offset": {"type": "number"}}, ["filePath"])
QWEN_SHELL = function("run_shell_command", {"command": STRING, "is_background": FLAG, "description": STRING,
                                            "directory": STRING}, ["command", "is_background"])
EXEC_COMMAND = function("exec_command", {"cmd": STRING, "workdir": STRING}, ["cmd"])
ECHO_MCP = function("echo_echo", {"text": STRING}, ["text"])  # opencode names an MCP tool <server>_<tool>


@dataclass
class Streamed:
    """What a client makes of a stream: the text, the reasoning, the calls, the finish reason, the usage."""

    text: str = ""
    reasoning: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    chunks: int = 0
    done: bool = False


def parse_stream(lines: Iterator[str]) -> Streamed:
    """Chat Completions SSE as OpenAI's SDKs read it: ``data:`` lines of ``chat.completion.chunk``s up to
    ``[DONE]``; a call's ``id``/``name`` come with its first delta at an ``index``, its arguments in pieces after."""
    out = Streamed()
    for line in lines:
        if not line.startswith("data:"):
            assert line == "" or line.startswith(":"), f"not SSE: {line!r}"
            continue
        assert not out.done, "a frame after [DONE]"
        data = line.removeprefix("data:").strip()
        if data == "[DONE]":
            out.done = True  # read on to the stream's end: a connection closed with data unread is reset
            continue
        chunk = json.loads(data)  # a frame that is not JSON fails the test here
        assert chunk["object"] == "chat.completion.chunk" and chunk["id"].startswith("chatcmpl-")
        out.chunks += 1
        if chunk.get("usage"):
            out.usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            out.text += delta.get("content") or ""
            out.reasoning += delta.get("reasoning_content") or ""
            for piece in delta.get("tool_calls") or []:
                while len(out.calls) <= piece["index"]:
                    out.calls.append({"id": None, "name": "", "arguments": ""})
                call = out.calls[piece["index"]]
                call["id"] = piece.get("id") or call["id"]
                call["name"] += piece.get("function", {}).get("name") or ""
                call["arguments"] += piece.get("function", {}).get("arguments") or ""
            out.finish_reason = choice.get("finish_reason") or out.finish_reason
    for call in out.calls:
        call["arguments"] = json.loads(call["arguments"])
    return out


@pytest.fixture
def server() -> Iterator[OpenAIChatServer]:
    with OpenAIChatServer() as started:
        yield started  # type: ignore[misc]


def ask(server: OpenAIChatServer, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
        **extra: Any) -> Streamed:
    body = {"model": "qwen3-coder-plus", "messages": messages, "stream": True, **extra}
    if tools is not None:
        body["tools"] = tools
    with httpx.Client(base_url=server.base_url) as client, client.stream(
            "POST", "/v1/chat/completions", json=body, headers={"authorization": "Bearer sk-scripted"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        return parse_stream(response.iter_lines())


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_a_prompt_is_a_shell_call_then_its_result_the_final_answer(server: OpenAIChatServer) -> None:
    first = ask(server, [{"role": "system", "content": "You are opencode."}, user(WRITE)], [OPENCODE_BASH])
    assert first.text == "I will run a shell command." and first.finish_reason == "tool_calls" and first.done
    [call] = first.calls
    assert call["id"].startswith("call_") and call["name"] == "bash"
    assert call["arguments"] == {"command": "echo hello > out.txt", "description": "run the scripted command"}
    answered = ask(server, [user(WRITE),
                            {"role": "assistant", "content": first.text, "tool_calls": [{
                                "id": call["id"], "type": "function",
                                "function": {"name": "bash", "arguments": json.dumps(call["arguments"])}}]},
                            {"role": "tool", "tool_call_id": call["id"], "content": ""}], [OPENCODE_BASH])
    assert answered.text == "".join(FINAL_ANSWER) and answered.calls == [] and answered.finish_reason == "stop"
    again = ask(server, [user(WRITE)], [OPENCODE_BASH])
    assert again.calls[0]["id"] != call["id"]  # every answer has fresh ids


def test_the_call_follows_the_tool_the_request_offers(server: OpenAIChatServer) -> None:
    qwen = ask(server, [user(WRITE)], [QWEN_SHELL]).calls[0]
    assert qwen["name"] == "run_shell_command"
    assert qwen["arguments"] == {"command": "echo hello > out.txt", "is_background": False,
                                 "description": "run the scripted command"}
    codex = ask(server, [user(WRITE)], [EXEC_COMMAND]).calls[0]
    assert (codex["name"], codex["arguments"]) == ("exec_command", {"cmd": "echo hello > out.txt"})
    server.read_path = "/workspace/notes.txt"
    read = ask(server, [user("Read my notes")], [OPENCODE_BASH, OPENCODE_READ]).calls[0]
    assert (read["name"], read["arguments"]) == ("read", {"filePath": "/workspace/notes.txt"})
    background = ask(server, [user("BACKGROUND sleep")], [QWEN_SHELL]).calls[0]
    assert background["arguments"]["is_background"] is True
    assert background["arguments"]["command"] == server.background_command


def test_words_alone_when_no_tool_fits(server: OpenAIChatServer) -> None:
    titled = ask(server, [user(WRITE)])  # no tools: a title or summary request
    assert titled.calls == [] and titled.text == "I will run a shell command." and titled.finish_reason == "stop"
    background = ask(server, [user("BACKGROUND sleep")], [OPENCODE_BASH])  # a shell with no background flag
    assert background.calls == [] and background.text == "I will run that in the background."
    asked = ask(server, [user("BARECALL QUESTION")], [OPENCODE_BASH])  # no question tool: its words stay
    assert asked.calls == [] and asked.text == "I need to ask you something."


def test_notool_think_and_refusals(server: OpenAIChatServer) -> None:
    plain = ask(server, [user("NOTOOL hi")], [OPENCODE_BASH])
    assert plain.text == "".join(PLAIN_ANSWER) and plain.calls == [] and plain.reasoning == ""
    thought = ask(server, [user(f"THINK {WRITE}")], [OPENCODE_BASH])
    assert thought.reasoning and thought.calls[0]["name"] == "bash"
    refused = ask(server, [user(WRITE), {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "The user rejected permission to use this tool."}],
        [OPENCODE_BASH])
    assert refused.text == "".join(REFUSED_ANSWER) and refused.calls == []
    words = ask(server, [user(f"{REFUSAL_NOTE} Use blue instead.")], [OPENCODE_BASH])
    assert words.text == "".join(REFUSED_ANSWER) and words.calls == []


def test_barecall_is_the_call_alone(server: OpenAIChatServer) -> None:
    bare = ask(server, [user(f"BARECALL {WRITE}")], [OPENCODE_BASH])
    assert bare.text == "" and [c["name"] for c in bare.calls] == ["bash"] and bare.finish_reason == "tool_calls"
    thought = ask(server, [user(f"THINK BARECALL {WRITE}")], [OPENCODE_BASH])
    assert thought.reasoning and thought.text == "" and len(thought.calls) == 1
    server.slow_delay = 0
    assert ask(server, [user("BARECALL NOTOOL")], [OPENCODE_BASH]).text == "".join(PLAIN_ANSWER)


def test_a_user_message_in_parts_and_an_mcp_tool(server: OpenAIChatServer) -> None:
    parts = {"role": "user", "content": [{"type": "text", "text": "<context>the workspace</context>"},
                                         {"type": "text", "text": "MCPTOOL:echo.echo please"}]}
    mcp = ask(server, [parts], [OPENCODE_BASH, ECHO_MCP])
    assert [(c["name"], c["arguments"]) for c in mcp.calls] == [("echo_echo", {"text": ""})]
    claude_named = function("mcp__echo__echo", {}, [])
    assert ask(server, [user("MCPTOOL:echo.echo")], [claude_named]).calls[0]["name"] == "mcp__echo__echo"


def test_usage_comes_last_when_asked_for(server: OpenAIChatServer) -> None:
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "messages": [user("NOTOOL")]}
    with httpx.Client(base_url=server.base_url) as client:
        frames = [line.removeprefix("data: ") for line in client.post("/v1/chat/completions", json=body).text
                  .splitlines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(frame) for frame in frames[:-1]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 110
    assert all(chunk["usage"] is None for chunk in chunks[:-1])
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert [chunk["choices"][0]["finish_reason"] for chunk in chunks[:-1]][-1] == "stop"
    without = ask(server, [user("NOTOOL")])
    assert without.usage is None and without.done


def test_non_streaming_is_the_same_answer_in_one_body(server: OpenAIChatServer) -> None:
    with httpx.Client(base_url=server.base_url) as client:
        body = {"model": "gpt-4.1", "messages": [user(f"THINK {WRITE}")], "tools": [QWEN_SHELL]}
        response = client.post("/v1/chat/completions", json=body).json()
        models = client.get("/v1/models").json()
        missing = client.post("/v1/embeddings", json={})
    assert response["object"] == "chat.completion" and response["model"] == "gpt-4.1"
    [choice] = response["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "I will run a shell command." and choice["message"]["reasoning_content"]
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "run_shell_command"
    assert json.loads(call["function"]["arguments"])["command"] == "echo hello > out.txt"
    assert response["usage"]["prompt_tokens"] == 100
    assert "gpt-4.1" in [model["id"] for model in models["data"]]
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(("mode", "status", "kind"), [("error401", 401, "invalid_request_error"),
                                                      ("error429", 429, "insufficient_quota"),
                                                      ("error500", 500, "server_error")])
def test_errors_have_openais_body(server: OpenAIChatServer, mode: str, status: int, kind: str) -> None:
    server.mode = mode
    with httpx.Client(base_url=server.base_url) as client:
        response = client.post("/v1/chat/completions", json={"model": "m", "messages": [user("hi")]})
    assert response.status_code == status and response.json()["error"]["type"] == kind


def test_garbage_mode_is_a_frame_no_client_can_read(server: OpenAIChatServer) -> None:
    server.mode = "garbage"
    with pytest.raises(json.JSONDecodeError):
        ask(server, [user("NOTOOL")])
