"""The scripted Gemini API (``generativelanguage`` v1beta) for the Gemini CLI.

Endpoints the CLI calls (research: headless-clis.md section 1):

* ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``: the model turns (SSE, ``data: <json>``);
* ``POST /v1beta/models/<model>:generateContent``: the router/classifier (asks for JSON) and utility calls;
* ``POST /v1beta/models/<model>:countTokens``.

Besides the common script (``ScriptedModelServer.decide``) the Gemini server understands:

* ``TOOLFAIL``  -> a ``read_file`` call outside the workspace, which the CLI rejects (``tool_result`` error);
* ``ZEROUSAGE`` -> usage metadata that reports 0 output tokens (as some gateways do);
* ``MCPTOOL:server.tool`` with the tool not declared but a ``tool_search`` tool (Qwen Code defers MCP tools behind
  it) -> a ``tool_search`` call first, then ``tool_call`` with the name the search returned.

Errors use Google's body: ``{"error": {"code": 401, "message": ..., "status": "UNAUTHENTICATED"}}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ambient_runner.scripted_models.base import (
    MCP_PATTERN,
    Plan,
    ScriptedModelServer,
    ScriptedResponse,
    sleep_between,
)

ERROR_STATUS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument (scripted)."),
    401: ("UNAUTHENTICATED", "API key not valid. Please pass a valid API key. (scripted)"),
    403: ("PERMISSION_DENIED", "The caller does not have permission (scripted)."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota). (scripted)"),
    500: ("INTERNAL", "An internal error has occurred. (scripted)"),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later. (scripted)"),
}
THOUGHT_TEXT = "Let me think about this request step by step."
TOOLFAIL_PATH = "/nonexistent/ambient-runner-toolfail.txt"
SEARCH_TOOL, BRIDGE_TOOL = "tool_search", "tool_call"  # Qwen Code's deferred tools: found, then called by name
_MODEL_PATH = re.compile(r"/models/([^/:?]+):(\w+)")


REFERENCED_FILES = "\n--- Content from referenced files ---"


def _last_text(content: dict[str, Any]) -> str:
    """The last text part: after an interrupted turn the CLI sends the old and the new prompt as parts of one
    user content, and the script must follow the new one. Files a prompt names with ``@`` come after it, between
    the CLI's own markers: the prompt is the text before them."""
    texts = [str(p["text"]) for p in content.get("parts", []) if isinstance(p, dict) and "text" in p]
    if REFERENCED_FILES in texts:
        texts = texts[:texts.index(REFERENCED_FILES)]
    return texts[-1] if texts else ""


def latest_user_turn(body: Any) -> tuple[str, list[Any]]:
    """(text of the latest user prompt, the function responses the latest content carries)."""
    contents = body.get("contents", []) if isinstance(body, dict) else []
    if not contents:
        return "", []
    last = contents[-1] if isinstance(contents[-1], dict) else {}
    results = [p["functionResponse"] for p in last.get("parts", []) if isinstance(p, dict) and "functionResponse" in p]
    for content in reversed(contents):
        if isinstance(content, dict) and content.get("role", "user") == "user":
            text = _last_text(content)
            if text:
                return text, results
    return "", results


def declared_tool_names(body: Any) -> list[str]:
    names: list[str] = []
    for tool in body.get("tools", []) if isinstance(body, dict) else []:
        for decl in tool.get("functionDeclarations", []) if isinstance(tool, dict) else []:
            if isinstance(decl, dict) and "name" in decl:
                names.append(str(decl["name"]))
    return names


def declared_mcp_tool(body: Any, server: str, tool: str) -> str | None:
    """The name the CLI declared for ``server``'s ``tool`` (``mcp_<server>_<tool>`` in CLI 0.61), if declared."""
    return next((name for name in declared_tool_names(body) if name.endswith(f"_{tool}") and server in name), None)


def mcp_tool_name(body: Any, server: str, tool: str) -> str:
    """The declared name of ``server``'s ``tool``, else Gemini CLI's own spelling of it."""
    return declared_mcp_tool(body, server, tool) or re.sub(r"[^a-zA-Z0-9_\-.:]", "_", f"mcp_{server}_{tool}")


def searched_mcp_tool(results: list[Any], server: str, tool: str) -> str | None:
    """The name of ``server``'s ``tool`` in the answers of ``tool_search`` calls (None: not searched, or not found)."""
    searches = [r for r in results if isinstance(r, dict) and r.get("name") == SEARCH_TOOL]
    if not searches or len(searches) != len(results):
        return None
    found = re.search(rf"[\w.-]*{re.escape(server)}[\w.-]*_{re.escape(tool)}\b", json.dumps(searches))
    return found.group(0) if found else None


class ScriptedGeminiServer(ScriptedModelServer):
    name = "scripted-gemini"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.prompt_tokens = 100
        self.output_tokens_per_chunk = 5

    def error_body(self, status: int) -> Any:
        code, message = ERROR_STATUS.get(status, ("UNKNOWN", f"Scripted error {status}."))
        return {"error": {"code": status, "message": message, "status": code}}

    # ----- routing ---------------------------------------------------------------------------------------
    def respond(self, method: str, path: str, body: Any) -> ScriptedResponse:
        match = _MODEL_PATH.search(path)
        if method != "POST" or not match:
            return ScriptedResponse(404, self._not_found(path))
        model, action = match.group(1), match.group(2)
        if action == "countTokens":
            return ScriptedResponse(200, {"totalTokens": self.prompt_tokens})
        if action == "generateContent":
            return ScriptedResponse(200, self._generate(model, body))
        if action == "streamGenerateContent":
            return ScriptedResponse(200, sse=self._stream(model, body))
        return ScriptedResponse(404, self._not_found(path))

    def _not_found(self, path: str) -> Any:
        return {"error": {"code": 404, "message": f"Unknown path {path} (scripted).", "status": "NOT_FOUND"}}

    # ----- non-streaming ---------------------------------------------------------------------------------
    def _generate(self, model: str, body: Any) -> Any:
        config = body.get("generationConfig", {}) if isinstance(body, dict) else {}
        if config.get("responseMimeType") == "application/json":
            # The model router/classifier (and other JSON utility calls): a small, valid JSON answer.
            text = json.dumps({"complexity_reasoning": "scripted", "complexity_score": 10})
            return self._chunk(model, [{"text": text}], finish=True, output_tokens=10)
        prompt, results = latest_user_turn(body)
        plan = self.decide(prompt, results)
        parts = [{"text": "".join(plan.chunks)}] if plan.kind != "tool" else [{"text": "Scripted summary."}]
        return self._chunk(model, parts, finish=True, output_tokens=10)

    # ----- streaming -------------------------------------------------------------------------------------
    def _stream(self, model: str, body: Any) -> Iterator[tuple[str | None, Any]]:
        prompt, results = latest_user_turn(body)
        plan = self._searched(prompt, results) or self.decide(prompt, results)
        zero_usage = "ZEROUSAGE" in prompt
        frames: list[list[dict[str, Any]]] = []
        if plan.think:
            frames.append([{"text": THOUGHT_TEXT, "thought": True}])
        frames.extend([{"text": chunk}] for chunk in plan.chunks)
        call = self._function_call(plan, prompt, body)
        if call is not None:
            frames.append([{"functionCall": call}])
        pause = self.chunk_pause(plan)
        output_tokens = 0 if zero_usage else self.output_tokens_per_chunk * len(frames)
        for index, parts in enumerate(frames):
            if index:
                sleep_between(pause)
            yield None, self._chunk(model, parts, finish=index == len(frames) - 1, output_tokens=output_tokens)

    def _function_call(self, plan: Plan, prompt: str, body: Any) -> dict[str, Any] | None:
        if plan.kind == "tool" and ("TOOLFAIL" in prompt or self.read_path):
            path = TOOLFAIL_PATH if "TOOLFAIL" in prompt else self.read_path
            return {"name": "read_file", "args": {"file_path": path}}
        if plan.kind == "tool":
            return {"name": "run_shell_command",
                    "args": {"command": self.shell_command, "description": "scripted shell command"}}
        if plan.kind == "mcp" and plan.mcp_found:
            return {"name": BRIDGE_TOOL, "args": {"name": plan.mcp_found, "arguments": {"text": "hello"}}}
        if plan.kind == "mcp":
            declared = declared_mcp_tool(body, plan.mcp_server, plan.mcp_tool)
            if declared is None and SEARCH_TOOL in declared_tool_names(body):
                return {"name": SEARCH_TOOL, "args": {"query": f"{plan.mcp_server} {plan.mcp_tool}"}}
            return {"name": mcp_tool_name(body, plan.mcp_server, plan.mcp_tool), "args": {"text": "hello"}}
        return None

    def _searched(self, prompt: str, results: list[Any]) -> Plan | None:
        """After a ``tool_search`` for an MCP tool that found it: its call through ``tool_call``."""
        mcp = MCP_PATTERN.search(prompt)
        found = mcp and searched_mcp_tool(results, mcp.group(1), mcp.group(2))
        if not mcp or not found:
            return None
        return Plan("mcp", [], mcp_server=mcp.group(1), mcp_tool=mcp.group(2), mcp_found=found)

    def _chunk(self, model: str, parts: list[dict[str, Any]], *, finish: bool, output_tokens: int) -> Any:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        payload: dict[str, Any] = {"candidates": [candidate], "modelVersion": model,
                                   "responseId": "scripted-response"}
        if finish:
            candidate["finishReason"] = "STOP"
            payload["usageMetadata"] = {
                "promptTokenCount": self.prompt_tokens,
                "candidatesTokenCount": output_tokens,
                "totalTokenCount": self.prompt_tokens + output_tokens,
            }
        return payload
