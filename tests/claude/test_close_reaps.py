"""Closing a Claude session ends the CLI's whole process group and reaps it: a tool process the CLI left behind is
killed and leaves no zombie (the runner is a subreaper, so the orphan is its child once the CLI has exited).

The CLI here is a small stand-in that speaks the SDK's control protocol (it answers ``initialize`` and a prompt),
starts a long "tool" in its own process group and exits when its stdin closes, leaving the tool running."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions
from proctable import group_members, pid_alive

from ambient_runner.bridges.claude.config import process_group_launcher
from ambient_runner.bridges.claude.session import ClaudeSession
from ambient_runner.process.stderr_tail import StderrTail
from ambient_runner.process.supervisor import become_subreaper

STAND_IN = textwrap.dedent("""
    import json, os, subprocess, sys
    tool = subprocess.Popen(["sleep", "600"])  # in the CLI's group, as a tool it leaves behind
    with open(os.environ["TOOL_PID_FILE"], "w") as out:
        out.write(str(tool.pid))
    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") == "control_request":
            send({"type": "control_response", "response": {"subtype": "success",
                  "request_id": message["request_id"], "response": {}}})
        elif message.get("type") == "user":
            send({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1,
                  "duration_api_ms": 1, "num_turns": 1, "session_id": "s-1", "result": "done"})
""")


async def test_close_kills_and_reaps_what_the_cli_left_in_its_group(tmp_path: Path) -> None:
    become_subreaper()  # as the runner is
    cli = tmp_path / "stand-in"
    cli.write_text(f"#!{sys.executable}\n{STAND_IN}")
    cli.chmod(0o755)
    launcher = process_group_launcher(cli, tmp_path / "bin")
    tool_pid_file = tmp_path / "tool.pid"

    def options(session_id: object, model: object, stderr: object, effort: object = None) -> ClaudeAgentOptions:
        return ClaudeAgentOptions(cli_path=launcher, cwd=tmp_path, stderr=stderr,  # type: ignore[arg-type]
                                  env={"TOOL_PID_FILE": str(tool_pid_file)})

    session = ClaudeSession("t-1", options, session_id=None, on_session_id=lambda _: None)
    try:
        items = [item async for item in session.turn("hello", None, StderrTail())]
        assert items[-1]["type"] == "result"
        pgid = session.pid
        assert pgid is not None and os.getpgid(pgid) == pgid  # the CLI leads its own group
        tool = int(tool_pid_file.read_text())
        assert os.getpgid(tool) == pgid and pid_alive(tool)
    finally:
        await session.close()
    assert not pid_alive(tool)
    assert group_members(pgid) == []  # no zombie: the CLI and its tool were both reaped
