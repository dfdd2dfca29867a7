"""The Gemini runner's ``/mcp-status`` from ``gemini mcp list``, made in rounds: a listing slower than the caller's
wait leaves its servers ``pending``, and the next call has what it printed. A stand-in for the CLI here (the real
one: ``tests/mcp/test_mcp_real_cli.py``), which counts its runs and prints as ``gemini mcp list`` does."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ambient_runner.bridges.gemini_cli.mcp_status import GeminiMcpStatus, parse_mcp_list
from ambient_runner.mcp.config import McpConfig, McpServer


def slow_listing(tmp_path: Path) -> Path:
    """A `gemini` whose ``mcp list`` takes a second, then says ``echo`` connected and ``broken`` disconnected."""
    cli = tmp_path / "gemini"
    cli.write_text(f"""#!{sys.executable}
import sys, time
open({str(tmp_path / 'runs')!r}, "a").write("x")
time.sleep(1)
print("Configured MCP servers:", flush=True)
print("✓ echo: python echo_server.py (stdio) - Connected", file=sys.stderr)
print("✗ broken: python -c exit (stdio) - Disconnected", file=sys.stderr)
""")
    cli.chmod(0o755)
    return cli


async def test_a_slow_listing_is_pending_then_known_and_kept(tmp_path: Path) -> None:
    config = McpConfig(servers={name: McpServer(name=name, transport="stdio", command="python")
                                for name in ("echo", "broken", "unlisted")})
    status = GeminiMcpStatus(wait=0.1)
    cli = str(slow_listing(tmp_path))
    try:
        first = await status.status(config, cli, tmp_path, dict(os.environ))
        assert [s["status"] for s in first] == ["pending"] * 3
        status.rounds.wait = 60
        later = await status.status(config, cli, tmp_path, dict(os.environ))
        again = await status.status(config, cli, tmp_path, dict(os.environ))
    finally:
        await status.close()
    assert [(s["name"], s["status"]) for s in later] == [("echo", "connected"), ("broken", "failed"),
                                                         ("unlisted", "configured")]
    assert again == later and (tmp_path / "runs").read_text() == "x"  # one listing for the three calls


def test_the_listings_lines() -> None:
    text = "✓ a: x (stdio) - Connected\n✗ b (from ext): y (http) - Disconnected\n- c: z (sse) - Connecting\n"
    assert parse_mcp_list(text) == {"a": "connected", "b": "failed", "c": "pending"}


async def test_a_listing_that_cannot_run_leaves_the_servers_as_configured(tmp_path: Path) -> None:
    config = McpConfig(servers={"echo": McpServer(name="echo", transport="stdio", command="python")})
    status = GeminiMcpStatus()
    report = await status.status(config, str(tmp_path / "no-gemini-here"), tmp_path, dict(os.environ))
    assert [(s["name"], s["status"]) for s in report] == [("echo", "configured")]  # never a 500
