"""Scripted OpenAI Responses API (``POST /v1/responses``, SSE) for the Codex runner.

Codex speaks the Responses API with named SSE events (``event: response.output_text.delta``...). The script
(``ScriptedModelServer.decide``) is applied to the latest user message of each request; a request whose input
ends with a tool result (``function_call_output`` / ``custom_tool_call_output``) gets the final answer.

* text: ``output_item.added`` (message), one ``output_text.delta`` per chunk, ``output_item.done``;
* THINK: a ``reasoning`` item with ``reasoning_summary_text.delta`` events first;
* a shell tool call: a ``function_call`` to the shell tool the request offers (``exec_command`` -> ``{"cmd"}``,
  ``shell_command`` -> ``{"command": str}``, ``shell`` -> ``{"command": [argv]}``);
* PATCH: a ``custom_tool_call`` to ``apply_patch`` adding ``hello.txt`` (a ``function_call`` if the tool is
  offered as a function);
* MCPTOOL:server.tool: Codex defers MCP tools behind ``tool_search``: a ``tool_search_call`` first, then a
  ``function_call`` to the tool in the namespace the search returned (``mcp__server__tool`` when offered as is);
* BARECALL: the call alone, no ``message`` item before it (as GPT-5-class models answer);
* every response ends with ``response.completed`` carrying ``usage``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import count
from typing import Any

from ambient_runner.scripted_models.base import (
    PLAN_STEPS,
    QUESTION,
    Plan,
    ScriptedModelServer,
    ScriptedResponse,
    sleep_between,
)

PATCH_TEXT = "*** Begin Patch\n*** Add File: hello.txt\n+hello from patch\n*** End Patch\n"
REASONING_SUMMARY = ["**Planning** I should", " do what was asked", " (scripted reasoning)."]
USAGE = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
FRONTEND = "frontend"  # MCPTOOL:frontend.<tool> calls the run's frontend tool <tool>
TOOL_RESULT_TYPES = {"function_call_output", "custom_tool_call_output", "mcp_call_output"}
ERROR_TYPES = {401: ("invalid_request_error", "invalid_api_key",
                     "Incorrect API key provided: sk-scr***. You can find your API key at "
                     "https://platform.openai.com/account/api-keys."),
               429: ("insufficient_quota", "rate_limit_exceeded",
                     "Rate limit reached for requests. Please try again in 1s."),
               500: ("server_error", None, "The server had an error while processing your request."),
               400: ("invalid_request_error", None, "scripted bad request")}



def openai_error_body(status: int) -> dict[str, Any]:
    """An OpenAI API's error body for ``status`` (what its clients parse and show)."""
    kind, code, message = ERROR_TYPES.get(status, ("server_error", None, f"scripted error {status}"))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def no_route(method: str, path: str) -> ScriptedResponse:
    """An OpenAI API's 404 for a path the scripted server does not serve."""
    return ScriptedResponse(status=404, json_body={"error": {
        "message": f"scripted server: no route {method} {path}", "type": "invalid_request_error",
        "code": "not_found", "param": None}})


Event = tuple[str | None, Any]


def latest_user_text(body: dict[str, Any]) -> str:
    """The text of the last ``user`` message in the request's input."""
    for item in reversed(body.get("input") or []):
        if isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
    return ""


def tool_results_at_end(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results in the input after the last user message."""
    results: list[dict[str, Any]] = []
    for item in reversed(body.get("input") or []):
        if not isinstance(item, dict):
            continue
        if item.get("type") in TOOL_RESULT_TYPES:
            results.append(item)
        elif item.get("type", "message") == "message" and item.get("role") == "user":
            break
    return results


def searched_tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The tools of the ``tool_search_output`` after the last user message (``None``: no search yet)."""
    for item in reversed(body.get("input") or []):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "tool_search_output":
            return [t for t in item.get("tools") or [] if isinstance(t, dict)]
        if item.get("type", "message") == "message" and item.get("role") == "user":
            return None
    return None


def mcp_function(tools: list[dict[str, Any]], server: str, tool: str) -> tuple[str, str | None] | None:
    """``(name, namespace)`` of ``server``'s ``tool`` among ``tools`` (plain functions or namespaces)."""
    for entry in tools:
        if entry.get("type") == "namespace" and server in str(entry.get("name", "")):
            for inner in entry.get("tools") or []:
                if isinstance(inner, dict) and inner.get("name") in (tool, f"mcp__{server}__{tool}"):
                    return str(inner["name"]), str(entry["name"])
        elif entry.get("name") == f"mcp__{server}__{tool}":
            return str(entry["name"]), None
        elif server == FRONTEND and entry.get("name") == tool:  # a frontend tool: Codex offers it by its own name
            return tool, None
    return None


def offered_tools(body: dict[str, Any]) -> dict[str, str]:
    """Tool name -> tool type (``function`` / ``custom`` / ...) from the request's ``tools``."""
    tools: dict[str, str] = {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name"):
            tools[str(tool["name"])] = str(tool.get("type", "function"))
    return tools


class OpenAIResponsesServer(ScriptedModelServer):
    """The scripted Responses API (Codex)."""

    name = "openai-responses"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self._ids = count(1)

    # ----- HTTP --------------------------------------------------------------------------------------------
    def respond(self, method: str, path: str, body: Any) -> ScriptedResponse:
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route.endswith("/models"):
            return ScriptedResponse(json_body={"object": "list", "data": [
                {"id": "gpt-5.5", "object": "model", "created": 0, "owned_by": "scripted"}], "models": []})
        if method == "POST" and route.endswith("/responses") and isinstance(body, dict):
            plan = self.decide(latest_user_text(body), tool_results_at_end(body))
            return ScriptedResponse(sse=self._stream(plan, body))
        return no_route(method, path)

    def error_body(self, status: int) -> Any:
        return openai_error_body(status)

    # ----- the stream -------------------------------------------------------------------------------------
    def _stream(self, plan: Plan, body: dict[str, Any]) -> Iterator[Event]:
        response_id = f"resp_{next(self._ids)}"
        output: list[dict[str, Any]] = []
        yield "response.created", {"type": "response.created", "response": {
            "id": response_id, "object": "response", "created_at": int(time.time()), "status": "in_progress",
            "model": body.get("model"), "output": []}}
        if plan.think:
            yield from self._reasoning(len(output), output)
        if plan.chunks:  # BARECALL: no message item before the call
            yield from self._message(plan, len(output), output)
        if plan.kind in ("tool", "patch", "mcp", "update_plan", "question"):
            yield from self._tool_call(plan, body, len(output), output)
        yield "response.completed", {"type": "response.completed", "response": {
            "id": response_id, "object": "response", "status": "completed", "model": body.get("model"),
            "output": output, "usage": USAGE}}

    def _reasoning(self, index: int, output: list[dict[str, Any]]) -> Iterator[Event]:
        item_id = f"rs_{next(self._ids)}"
        yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                             "item": {"type": "reasoning", "id": item_id, "summary": []}}
        yield "response.reasoning_summary_part.added", {
            "type": "response.reasoning_summary_part.added", "item_id": item_id, "output_index": index,
            "summary_index": 0, "part": {"type": "summary_text", "text": ""}}
        for chunk in REASONING_SUMMARY:
            yield "response.reasoning_summary_text.delta", {
                "type": "response.reasoning_summary_text.delta", "item_id": item_id, "output_index": index,
                "summary_index": 0, "delta": chunk}
        text = "".join(REASONING_SUMMARY)
        yield "response.reasoning_summary_text.done", {
            "type": "response.reasoning_summary_text.done", "item_id": item_id, "output_index": index,
            "summary_index": 0, "text": text}
        item = {"type": "reasoning", "id": item_id, "summary": [{"type": "summary_text", "text": text}]}
        output.append(item)
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                            "item": item}

    def _message(self, plan: Plan, index: int, output: list[dict[str, Any]]) -> Iterator[Event]:
        item_id = f"msg_{next(self._ids)}"
        yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                             "item": {"type": "message", "id": item_id, "role": "assistant",
                                                      "status": "in_progress", "content": []}}
        yield "response.content_part.added", {
            "type": "response.content_part.added", "item_id": item_id, "output_index": index,
            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}
        pause = self.chunk_pause(plan)
        for chunk in plan.chunks:
            sleep_between(pause)
            yield "response.output_text.delta", {"type": "response.output_text.delta", "item_id": item_id,
                                                 "output_index": index, "content_index": 0, "delta": chunk}
        text = "".join(plan.chunks)
        yield "response.output_text.done", {"type": "response.output_text.done", "item_id": item_id,
                                            "output_index": index, "content_index": 0, "text": text}
        item = {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        output.append(item)
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                            "item": item}

    def _tool_call(self, plan: Plan, body: dict[str, Any], index: int,
                   output: list[dict[str, Any]]) -> Iterator[Event]:
        tools = offered_tools(body)
        call_id = f"call_{next(self._ids)}"
        if plan.kind == "mcp":
            yield from self._mcp_call(plan, body, index, output, call_id)
            return
        if plan.kind == "patch" and tools.get("apply_patch", "custom") == "custom":
            item: dict[str, Any] = {"type": "custom_tool_call", "id": f"ctc_{call_id}", "call_id": call_id,
                                    "name": "apply_patch", "input": PATCH_TEXT}
        else:
            name, arguments = self._function_call(plan, tools)
            item = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
                    "arguments": json.dumps(arguments)}
        yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                             "item": {**item, "status": "in_progress"}}
        done = {**item, "status": "completed"}
        output.append(done)
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                            "item": done}

    def _mcp_call(self, plan: Plan, body: dict[str, Any], index: int, output: list[dict[str, Any]],
                  call_id: str) -> Iterator[Event]:
        """Codex defers MCP tools behind ``tool_search``: search first, then call the tool in its namespace."""
        found = mcp_function([t for t in body.get("tools") or [] if isinstance(t, dict)],
                             plan.mcp_server, plan.mcp_tool)
        searched = searched_tools(body)
        if found is None and searched is not None:
            found = mcp_function(searched, plan.mcp_server, plan.mcp_tool)
        search_offered = any(isinstance(t, dict) and t.get("type") == "tool_search" for t in body.get("tools") or [])
        if found is None and searched is None and search_offered:
            item: dict[str, Any] = {"type": "tool_search_call", "id": f"ts_{call_id}", "call_id": call_id,
                                    "execution": "client",
                                    "arguments": {"query": f"{plan.mcp_server} {plan.mcp_tool}"}}
        else:
            name, namespace = found or (f"mcp__{plan.mcp_server}__{plan.mcp_tool}", None)
            item = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
                    "arguments": "{}"}
            if namespace:
                item["namespace"] = namespace
        yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                             "item": {**item, "status": "in_progress"}}
        done = {**item, "status": "completed"}
        output.append(done)
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                            "item": done}

    def _function_call(self, plan: Plan, tools: dict[str, str]) -> tuple[str, dict[str, Any]]:
        if plan.kind == "patch":  # apply_patch offered as a function tool
            return "apply_patch", {"input": PATCH_TEXT}
        if plan.kind == "update_plan":
            return "update_plan", {"explanation": "The scripted plan.", "plan": PLAN_STEPS}
        if plan.kind == "question":  # Codex offers it in its plan mode
            asked = {"id": "colour", "header": QUESTION["header"], "question": QUESTION["question"],
                     "options": QUESTION["options"]}
            return "request_user_input", {"questions": [asked]}
        if plan.kind == "mcp":
            wanted = f"mcp__{plan.mcp_server}__{plan.mcp_tool}"
            name = next((t for t in tools if t == wanted or t.endswith(f"__{plan.mcp_tool}")), wanted)
            return name, {}
        if "exec_command" in tools:
            return "exec_command", {"cmd": self.shell_command}
        if "shell_command" in tools:
            return "shell_command", {"command": self.shell_command}
        return "shell", {"command": ["bash", "-lc", self.shell_command]}
