"""``GET /mcp/status``'s body in the platform backend's shape, from the runner's own status entries."""

from __future__ import annotations

from ambient_runner.mcp.status import McpServerStatus, platform_shape


def test_each_status_word_and_the_tools_the_ui_reads() -> None:
    servers = [McpServerStatus(name=name, transport="stdio", status=status, tools=tools).wire()
               for name, status, tools in [("a", "connected", ["say"]), ("b", "failed", None),
                                           ("c", "pending", None), ("d", "needs-auth", None),
                                           ("e", "disabled", None), ("f", "configured", None)]]
    shaped = platform_shape(servers)
    assert shaped["totalCount"] == 6
    assert [(s["name"], s["displayName"], s["status"]) for s in shaped["servers"]] == [
        ("a", "a", "connected"), ("b", "b", "error"), ("c", "c", "configured"), ("d", "d", "error"),
        ("e", "e", "disconnected"), ("f", "f", "configured")]
    assert shaped["servers"][0]["tools"] == [{"name": "say", "annotations": {}}]
    assert "tools" not in shaped["servers"][1]
