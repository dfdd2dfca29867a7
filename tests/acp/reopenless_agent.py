"""A tiny ACP agent (stdio, JSON-RPC lines) that offers neither ``session/load`` nor ``session/resume`` in its
``initialize``: ``session/new`` gives a session, ``session/prompt`` answers one text chunk and ends its turn (a
prompt with ``KILLME`` in it: the chunk, then it kills itself with SIGKILL mid-turn), any other request is answered
-32601. It calls no model."""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from typing import Any

ANSWER = "Hello from an agent that keeps no sessions."


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of ``method``; None: not one it has."""
    if method == "initialize":
        return {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [],
                "agentInfo": {"name": "reopenless-agent", "version": "0.0.1"}}
    if method == "session/new":
        return {"sessionId": f"s-{uuid.uuid4().hex[:12]}"}
    if method == "session/prompt":
        send({"method": "session/update", "params": {"sessionId": params["sessionId"], "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ANSWER}}}})
        if "KILLME" in json.dumps(params.get("prompt")):
            os.kill(os.getpid(), signal.SIGKILL)
        return {"stopReason": "end_turn"}
    return None


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification (session/cancel) or a reply
        result = answer(message["method"], message.get("params") or {})
        if result is None:
            send({"id": message["id"], "error": {"code": -32601, "message": f"Method not found: {message['method']}"}})
        else:
            send({"id": message["id"], "result": result})


if __name__ == "__main__":
    main()
