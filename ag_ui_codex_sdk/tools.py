"""Codex thread items that are tool calls: their AG-UI tool name, arguments and result.

* ``commandExecution`` -> ``shell`` ``{"command", "cwd"}``; result ``{"status", "exitCode", "output"}``
* ``fileChange``       -> ``apply_patch`` ``{"changes": [{"path", "kind"}]}``; result ``{"status", "changes"}``
* ``mcpToolCall``      -> ``mcp__<server>__<tool>`` with the call's arguments; result the MCP content or error
* ``webSearch``        -> ``web_search`` ``{"query", "action"}``; result ``{"query", "results"}``
* ``dynamicToolCall``  -> the tool's name with its arguments; result its content items
"""

from __future__ import annotations

import json

from ag_ui_cli_common.json_types import JsonObject, JsonValue, iterable_or_empty

TOOL_ITEM_TYPES = ("commandExecution", "fileChange", "mcpToolCall", "webSearch", "dynamicToolCall")


def tool_name(item: JsonObject) -> str:
    kind = item.get("type")
    if kind == "commandExecution":
        return "shell"
    if kind == "fileChange":
        return "apply_patch"
    if kind == "mcpToolCall":
        return f"mcp__{item.get('server', 'unknown')}__{item.get('tool', 'unknown')}"
    if kind == "webSearch":
        return "web_search"
    if kind == "dynamicToolCall":
        namespace = item.get("namespace")
        return f"{namespace}__{item.get('tool')}" if namespace else str(item.get("tool", "tool"))
    return str(kind)


def args_known_at_start(item: JsonObject) -> bool:
    """Web searches only know their query when they complete."""
    return item.get("type") != "webSearch"


def _kind(change: JsonObject) -> str:
    kind = change.get("kind")
    if isinstance(kind, dict):
        return str(kind.get("type", "update"))
    return str(kind or "update")


def file_changes(item: JsonObject) -> list[JsonValue]:
    changes: list[JsonValue] = []
    for change in iterable_or_empty(item.get("changes")):
        if isinstance(change, dict):
            entry: JsonObject = {"path": str(change.get("path", "")), "kind": _kind(change)}
            kind = change.get("kind")
            move = kind.get("move_path") if isinstance(kind, dict) else None
            if move:
                entry["movePath"] = move
            changes.append(entry)
    return changes


def tool_arguments(item: JsonObject) -> JsonObject:
    kind = item.get("type")
    if kind == "commandExecution":
        return {"command": item.get("command", ""), "cwd": item.get("cwd")}
    if kind == "fileChange":
        return {"changes": file_changes(item)}
    if kind == "mcpToolCall":
        arguments = item.get("arguments")
        return arguments if isinstance(arguments, dict) else {"arguments": arguments}
    if kind == "webSearch":
        args: JsonObject = {"query": item.get("query", "")}
        if item.get("action") is not None:
            args["action"] = item["action"]
        return args
    arguments = item.get("arguments")
    return arguments if isinstance(arguments, dict) else {"arguments": arguments}


def _mcp_text(result: JsonObject) -> str:
    parts = []
    for block in iterable_or_empty(result.get("content")):
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(json.dumps(block))
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"]))
    return "\n".join(parts)


def tool_result(item: JsonObject) -> str:
    """The TOOL_CALL_RESULT content (a string) of a completed tool item."""
    kind, status = item.get("type"), item.get("status")
    if kind == "commandExecution":
        return json.dumps({"status": status, "exitCode": item.get("exitCode"),
                           "output": item.get("aggregatedOutput") or ""})
    if kind == "fileChange":
        return json.dumps({"status": status, "changes": file_changes(item)})
    if kind == "mcpToolCall":
        error = item.get("error")
        if isinstance(error, dict) and error.get("message"):
            return json.dumps({"status": status, "error": error["message"]})
        result = item.get("result")
        text = _mcp_text(result) if isinstance(result, dict) else ""
        return json.dumps({"status": status, "content": text})
    if kind == "webSearch":
        return json.dumps({"query": item.get("query", ""), "results": item.get("results") or []})
    return json.dumps({"status": status, "success": item.get("success"),
                       "content": item.get("contentItems") or []})
