"""The scripted OpenAI Chat Completions API (``POST /v1/chat/completions``, SSE or JSON; ``GET /v1/models``).

The API of OpenAI-compatible providers, which ACP agents speak (opencode's ``@ai-sdk/openai-compatible`` provider,
Qwen Code's ``--auth-type openai``, Copilot's and Cline's bring-your-own-key). The script
(``ScriptedModelServer.decide``) is applied to the text of the last ``user`` message; a request whose messages after
it hold ``role: tool`` results gets the final answer.

* text: one ``chat.completion.chunk`` per script chunk (``delta.content``), the first one carrying ``role``;
* THINK: ``delta.reasoning_content`` first (the field DeepSeek, Qwen and vLLM stream a model's reasoning in);
* a call: ``delta.tool_calls`` (``index``, ``id``, ``type``, ``function.name``, then ``function.arguments`` in two
  pieces), ``finish_reason: tool_calls``; a text answer ends with ``finish_reason: stop``;
* ``stream_options.include_usage``: every chunk has ``usage: null`` and a last chunk with no choices carries it;
* ``data: [DONE]`` closes the stream; without ``stream`` the same answer is one ``chat.completion``.

Which tool a call uses is read from the request's ``tools`` (an agent names and shapes its tools its own way), and
its arguments follow that tool's JSON schema (a required flag the script does not know is ``false``, a string ``""``):

* the shell: the first offered of ``bash``, ``Bash``, ``run_shell_command``, ``shell_command``, ``exec_command``,
  ``shell`` (``command`` as a string, or as an argv when the schema says ``array``; ``cmd`` for ``exec_command``);
* ``read_path`` set: the agent's file tool (``read``, ``Read``, ``read_file``, ``view``), the path in whichever of
  ``filePath``, ``file_path``, ``absolute_path``, ``path`` it declares (the shell when it offers none);
* PATCH: ``apply_patch`` when offered (the patch in its one string argument), else the shell;
* BACKGROUND: the shell with its background flag (``is_background``, ``run_in_background``) when it has one;
* SUBAGENT, QUESTION, UPDATEPLAN: Claude's ``Agent`` / ``AskUserQuestion``, Codex's ``request_user_input`` /
  ``update_plan`` when offered;
* MCPTOOL:server.tool: the offered tool of that server (``mcp__server__tool``, ``server_tool``, ``mcp_server_tool``,
  the tool's own name for ``frontend``);
* a call the request offers no tool for, or a request with no tools at all (a title or summary request): the
  script's words alone, never a call to a tool the agent did not declare.

Errors have OpenAI's body (``{"error": {"message", "type", "param", "code"}}``), as the Responses server's.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ambient_runner.scripted_models.base import (
    PLAN_STEPS,
    QUESTION,
    Plan,
    RawData,
    ScriptedModelServer,
    ScriptedResponse,
    sleep_between,
)
from ambient_runner.scripted_models.openai_responses import PATCH_TEXT, no_route, openai_error_body

REASONING = ["Let me think about this.", " The user wants a short answer."]
SHELL_TOOLS = ("bash", "Bash", "run_shell_command", "shell_command", "exec_command", "shell")
READ_TOOLS = ("read", "Read", "read_file", "view")
PATH_ARGUMENTS = ("filePath", "file_path", "absolute_path", "path")
BACKGROUND_FLAGS = ("is_background", "run_in_background")
FRONTEND = "frontend"  # MCPTOOL:frontend.<tool> calls the run's frontend tool <tool>
PROMPT_TOKENS, COMPLETION_TOKENS = 100, 10
MODELS = ("gpt-4.1", "qwen3-coder-plus", "scripted-chat")

Event = tuple[str | None, Any]


@dataclass(frozen=True)
class Call:
    """One tool call of an answer."""

    id: str
    name: str
    arguments: str  # JSON text, as the API carries it


def latest_user_text(messages: Sequence[Any]) -> str:
    """The text of the last ``user`` message (a string, or its ``text`` parts joined)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(str(part.get("text", "")) for part in content or []
                             if isinstance(part, dict) and part.get("type") == "text")
    return ""


def tool_results_at_end(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The ``role: tool`` messages after the last ``user`` message."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            break
        if message.get("role") == "tool":
            results.append(message)
    return results


def offered_tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Tool name -> its JSON schema (``parameters``) from the request's ``tools`` (``type: function``)."""
    tools: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            schema = function.get("parameters")
            tools[str(function["name"])] = schema if isinstance(schema, dict) else {}
    return tools


def fill_arguments(schema: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    """``known`` values for the properties ``schema`` declares (all of them when it declares none), then a neutral
    value for each other required property: ``false``, ``""``, ``0``, ``[]`` or ``{}`` by its type."""
    declared = schema.get("properties")
    properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
    arguments = {k: v for k, v in known.items() if not properties or k in properties}
    neutral: dict[str, Any] = {"boolean": False, "string": "", "integer": 0, "number": 0, "array": [], "object": {}}
    for name in schema.get("required") or []:
        if name not in arguments:
            arguments[name] = neutral.get(property_type(schema, name) or "string", "")
    return arguments


def property_type(schema: dict[str, Any], name: str) -> str:
    properties = schema.get("properties")
    prop = properties.get(name) if isinstance(properties, dict) else None
    kind = prop.get("type") if isinstance(prop, dict) else None
    return kind if isinstance(kind, str) else ""


def mcp_tool_name(tools: dict[str, dict[str, Any]], server: str, tool: str) -> str | None:
    """The name the agent declared for ``server``'s ``tool``."""
    for name in (f"mcp__{server}__{tool}", f"{server}_{tool}", f"mcp_{server}_{tool}", f"{server}__{tool}"):
        if name in tools:
            return name
    if server == FRONTEND and tool in tools:
        return tool
    return next((name for name in tools if server in name and name.endswith(tool)), None)


class OpenAIChatServer(ScriptedModelServer):
    """The scripted Chat Completions API (OpenAI-compatible providers)."""

    name = "scripted-openai-chat"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self._ids = itertools.count(1)

    # ----- HTTP --------------------------------------------------------------------------------------------
    def respond(self, method: str, path: str, body: Any) -> ScriptedResponse:
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route.endswith("/models"):
            return ScriptedResponse(json_body={"object": "list", "data": [
                {"id": model, "object": "model", "created": 0, "owned_by": "scripted"} for model in MODELS]})
        if method == "POST" and route.endswith("/chat/completions") and isinstance(body, dict):
            return self._complete(body)
        return no_route(method, path)

    def error_body(self, status: int) -> Any:
        return openai_error_body(status)

    def _complete(self, body: dict[str, Any]) -> ScriptedResponse:
        sent = body.get("messages")
        messages: list[Any] = sent if isinstance(sent, list) else []
        prompt, results = latest_user_text(messages), tool_results_at_end(messages)
        plan = self.decide(prompt, results)
        call = self.tool_call(plan, offered_tools(body))
        if call is None and not plan.chunks:  # BARECALL of a call this agent has no tool for: the words stay
            plan = replace(plan, chunks=self._decide(prompt, results).chunks)
        model = str(body.get("model") or "scripted-chat")
        completion_id = f"chatcmpl-scripted-{next(self._ids)}"
        if not body.get("stream"):
            return ScriptedResponse(json_body=self._completion(completion_id, model, plan, call))
        options = body.get("stream_options")
        usage = isinstance(options, dict) and bool(options.get("include_usage"))
        return ScriptedResponse(sse=self._stream(completion_id, model, plan, call, usage))

    # ----- the script -> one call ----------------------------------------------------------------------------
    def tool_call(self, plan: Plan, tools: dict[str, dict[str, Any]]) -> Call | None:
        """The call ``plan`` makes with the tools the request offers (``None``: words only)."""
        found = self._call(plan, tools) if tools else None
        if found is None:
            return None
        name, arguments = found
        return Call(f"call_scripted_{next(self._ids)}", name, json.dumps(arguments))

    def _call(self, plan: Plan, tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        if plan.kind == "tool" and self.read_path:
            reader = next((name for name in READ_TOOLS if name in tools), None)
            if reader is not None:
                schema = tools[reader]
                key = next((k for k in PATH_ARGUMENTS if k in (schema.get("properties") or {})), "file_path")
                return reader, fill_arguments(schema, {key: self.read_path})
        if plan.kind == "patch" and "apply_patch" in tools:
            schema = tools["apply_patch"]
            strings = [k for k in schema.get("properties") or {} if property_type(schema, k) == "string"]
            return "apply_patch", fill_arguments(schema, {(strings[0] if strings else "input"): PATCH_TEXT})
        if plan.kind in ("tool", "patch"):
            return self._shell(tools, self.shell_command, background=False)
        if plan.kind == "background":
            return self._shell(tools, self.background_command, background=True)
        if plan.kind == "mcp":
            name = mcp_tool_name(tools, plan.mcp_server, plan.mcp_tool)
            return (name, fill_arguments(tools[name], {})) if name else None
        if plan.kind == "subagent" and "Agent" in tools:
            return "Agent", fill_arguments(tools["Agent"], {
                "description": "scripted sub-agent", "prompt": self.subagent_prompt,
                "subagent_type": "general-purpose", "run_in_background": False})
        if plan.kind == "question" and "AskUserQuestion" in tools:
            return "AskUserQuestion", {"questions": [QUESTION]}
        if plan.kind == "question" and "request_user_input" in tools:
            asked = {"id": "colour", "header": QUESTION["header"], "question": QUESTION["question"],
                     "options": QUESTION["options"]}
            return "request_user_input", {"questions": [asked]}
        if plan.kind == "update_plan" and "update_plan" in tools:
            return "update_plan", {"explanation": "The scripted plan.", "plan": PLAN_STEPS}
        return None

    @staticmethod
    def _shell(tools: dict[str, dict[str, Any]], command: str, *,
               background: bool) -> tuple[str, dict[str, Any]] | None:
        name = next((n for n in SHELL_TOOLS if n in tools), None)
        if name is None:
            return None
        schema = tools[name]
        flag = next((f for f in BACKGROUND_FLAGS if f in (schema.get("properties") or {})), None)
        if background and flag is None:  # no way to run it in the background: the words alone
            return None
        if name == "exec_command" or "cmd" in (schema.get("properties") or {}):
            known: dict[str, Any] = {"cmd": command}
        elif property_type(schema, "command") == "array" or name == "shell":
            known = {"command": ["bash", "-lc", command]}
        else:
            known = {"command": command}
        known["description"] = "run the scripted command"
        if flag is not None:
            known[flag] = background
        return name, fill_arguments(schema, known)

    # ----- answers -----------------------------------------------------------------------------------------
    @staticmethod
    def _usage() -> dict[str, Any]:
        return {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}

    def _completion(self, completion_id: str, model: str, plan: Plan, call: Call | None) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(plan.chunks) or None, "refusal": None}
        if plan.think:
            message["reasoning_content"] = "".join(REASONING)
        if call is not None:
            message["tool_calls"] = [{"id": call.id, "type": "function",
                                      "function": {"name": call.name, "arguments": call.arguments}}]
        return {"id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": "tool_calls" if call is not None else "stop"}],
                "usage": self._usage(), "system_fingerprint": None}

    def _stream(self, completion_id: str, model: str, plan: Plan, call: Call | None,
                include_usage: bool) -> Iterator[Event]:
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
            payload: dict[str, Any] = {
                "id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
            if include_usage:
                payload["usage"] = None
            return None, payload

        yield chunk({"role": "assistant", "content": ""})
        if plan.think:
            for piece in REASONING:
                yield chunk({"reasoning_content": piece})
        pause = self.chunk_pause(plan)
        for position, piece in enumerate(plan.chunks):
            if position:
                sleep_between(pause)
            yield chunk({"content": piece})
        if call is not None:
            cut = len(call.arguments) // 2
            yield chunk({"tool_calls": [{"index": 0, "id": call.id, "type": "function",
                                         "function": {"name": call.name, "arguments": ""}}]})
            for piece in (call.arguments[:cut], call.arguments[cut:]):
                yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls" if call is not None else "stop")
        if include_usage:
            yield None, {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                         "system_fingerprint": None, "choices": [], "usage": self._usage()}
        yield None, RawData("[DONE]")
