"""The scripted Anthropic Messages API (``POST /v1/messages[?beta=true]``, SSE or JSON, ``/count_tokens``).

Claude Code is pointed at it with ``ANTHROPIC_BASE_URL`` and a fake key. The plan comes from the last message
whose role is ``user`` (Claude Code also sends ``role: system`` entries inside ``messages``, which are skipped).
Every response gets fresh ids (``msg_scripted_<n>``, ``toolu_scripted_<n>``), so a later turn in the same
session never reuses a tool-call id.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

from ambient_runner.scripted_models.base import QUESTION, Plan, ScriptedModelServer, ScriptedResponse, sleep_between

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
THINKING_TEXT = ["Let me think about this.", " The user wants a short answer."]
READ_TOOLS = {"Read": "file_path", "read": "filePath"}  # a file reader the request may declare -> its path argument


def last_user_message(messages: list[Any]) -> dict[str, Any]:
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return message
    return {}


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(parts)


def tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


class AnthropicScriptedServer(ScriptedModelServer):
    name = "scripted-anthropic"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self._ids = itertools.count(1)

    # ----- HTTP ------------------------------------------------------------------------------------------
    def respond(self, method: str, path: str, body: Any) -> ScriptedResponse:
        route = path.split("?", 1)[0].rstrip("/")
        if method != "POST" or not isinstance(body, dict):
            return ScriptedResponse(404, self._error(404, "not_found_error", f"no route {method} {path}"))
        if route.endswith("/v1/messages/count_tokens"):
            return ScriptedResponse(200, {"input_tokens": 100})
        if not route.endswith("/v1/messages"):
            return ScriptedResponse(404, self._error(404, "not_found_error", f"no route {method} {path}"))
        user = last_user_message(body.get("messages") or [])
        plan = self.decide(message_text(user), tool_results(user))
        blocks = self.content_blocks(plan, [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)])
        model = str(body.get("model") or "claude-scripted")
        message_id = f"msg_scripted_{next(self._ids)}"
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        if not body.get("stream"):
            return ScriptedResponse(200, self._full_message(message_id, model, blocks, stop_reason))
        return ScriptedResponse(200, sse=self._sse(plan, message_id, model, blocks, stop_reason))

    def error_body(self, status: int) -> Any:
        return self._error(status, ERROR_TYPES.get(status, "api_error"), f"scripted error {status}")

    @staticmethod
    def _error(status: int, kind: str, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}

    # ----- script -> content blocks ----------------------------------------------------------------------
    def content_blocks(self, plan: Plan, tools: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The response's content blocks; text/thinking carry their chunks, tool_use its JSON pieces. The calls use
        the names the request's ``tools`` declare: its shell (Claude Code's ``Bash``, opencode's ``bash``), its file
        reader (``Read`` with ``file_path``, opencode's ``read`` with ``filePath``), an MCP tool (Claude Code's
        ``mcp__<server>__<tool>``, opencode's ``<server>_<tool>``)."""
        shell = next((name for name in ("Bash", "bash") if name in tools), "Bash")
        reader = next((name for name in READ_TOOLS if name in tools), "Read")
        blocks: list[dict[str, Any]] = []
        if plan.think:
            blocks.append({"type": "thinking", "chunks": list(THINKING_TEXT),
                           "signature": f"scripted-signature-{len(self.requests)}"})
        if plan.chunks:  # BARECALL: no text block before the call
            blocks.append({"type": "text", "chunks": list(plan.chunks)})
        if plan.kind == "tool" and self.read_path:
            blocks.append({"type": "tool_use", "id": f"toolu_scripted_{next(self._ids)}", "name": reader,
                           "pieces": [json.dumps({READ_TOOLS[reader]: self.read_path})]})
        elif plan.kind in ("tool", "patch", "background"):
            command: dict[str, str | bool] = {"command": self.shell_command,
                                              "description": "run the scripted command"}
            if plan.kind == "background":
                command = {"command": self.background_command, "description": "run the scripted background command",
                           "run_in_background": True}
            arguments = json.dumps(command)
            cut = len(arguments) // 2
            blocks.append({"type": "tool_use", "id": f"toolu_scripted_{next(self._ids)}", "name": shell,
                           "pieces": [arguments[:cut], arguments[cut:]]})
        elif plan.kind == "subagent":
            arguments = json.dumps({"description": "scripted sub-agent", "prompt": self.subagent_prompt,
                                    "subagent_type": "general-purpose", "run_in_background": False})
            blocks.append({"type": "tool_use", "id": f"toolu_scripted_{next(self._ids)}", "name": "Agent",
                           "pieces": [arguments]})
        elif plan.kind == "question":
            blocks.append({"type": "tool_use", "id": f"toolu_scripted_{next(self._ids)}", "name": "AskUserQuestion",
                           "pieces": [json.dumps({"questions": [QUESTION]})]})
        elif plan.kind == "mcp":
            named = [name for name in tools if name.endswith(f"_{plan.mcp_tool}") and plan.mcp_server in name]
            blocks.append({"type": "tool_use", "id": f"toolu_scripted_{next(self._ids)}",
                           "name": next(iter(named), f"mcp__{plan.mcp_server}__{plan.mcp_tool}"), "pieces": ["{}"]})
        return blocks

    @staticmethod
    def _usage(output_tokens: int = 10) -> dict[str, int]:
        return {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                "output_tokens": output_tokens}

    def _full_message(self, message_id: str, model: str, blocks: list[dict[str, Any]],
                      stop_reason: str) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        for block in blocks:
            if block["type"] == "text":
                content.append({"type": "text", "text": "".join(block["chunks"])})
            elif block["type"] == "thinking":
                content.append({"type": "thinking", "thinking": "".join(block["chunks"]),
                                "signature": block["signature"]})
            else:
                content.append({"type": "tool_use", "id": block["id"], "name": block["name"],
                                "input": json.loads("".join(block["pieces"]))})
        return {"id": message_id, "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": stop_reason, "stop_sequence": None, "usage": self._usage()}

    def _sse(self, plan: Plan, message_id: str, model: str, blocks: list[dict[str, Any]],
             stop_reason: str) -> Iterator[tuple[str | None, Any]]:
        start: dict[str, Any] = {"id": message_id, "type": "message", "role": "assistant", "model": model,
                                 "content": [], "stop_reason": None, "stop_sequence": None, "usage": self._usage(1)}
        yield "message_start", {"type": "message_start", "message": start}
        pause = self.chunk_pause(plan)
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                yield from self._block(index, {"type": "text", "text": ""},
                                       [{"type": "text_delta", "text": c} for c in block["chunks"]], pause)
            elif block["type"] == "thinking":
                deltas = [{"type": "thinking_delta", "thinking": c} for c in block["chunks"]]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
                yield from self._block(index, {"type": "thinking", "thinking": "", "signature": ""}, deltas, 0)
            else:
                yield from self._block(index, {"type": "tool_use", "id": block["id"], "name": block["name"],
                                               "input": {}},
                                       [{"type": "input_json_delta", "partial_json": p} for p in block["pieces"]],
                                       0)
        yield "message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                "usage": {"output_tokens": 10}}
        yield "message_stop", {"type": "message_stop"}

    @staticmethod
    def _block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]],
               pause: float) -> Iterator[tuple[str | None, Any]]:
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        for position, delta in enumerate(deltas):
            if position:
                sleep_between(pause)
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
