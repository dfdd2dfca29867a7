"""A Claude Code process that dies at once, before the SDK can write to it: the start fails naming the signal.

The SDK drops the process when a start fails; the runner's transport keeps it, so how it died is known however
fast that was (the CLI here is a script that SIGKILLs itself, so the write of the initialize request fails)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from ambient_runner.bridges.claude.session import ClaudeSession
from ambient_runner.bridges.contract import BridgeError
from ambient_runner.process.stderr_tail import StderrTail


def _cli(tmp_path: Path, body: str) -> Path:
    cli = tmp_path / "claude"
    cli.write_text(f"#!/bin/sh\n{body}\n")
    cli.chmod(0o755)
    return cli


def _session(tmp_path: Path, cli: Path) -> ClaudeSession:
    def options(session_id: object, model: object, stderr: object, effort: object = None) -> ClaudeAgentOptions:
        return ClaudeAgentOptions(cli_path=cli, cwd=tmp_path, env={}, stderr=stderr)  # type: ignore[arg-type]
    return ClaudeSession("t-1", options, session_id=None, on_session_id=lambda _: None)


async def start_error(tmp_path: Path, body: str, code: str = "CLI_START_FAILED") -> BridgeError:
    """The error of a turn on a CLI that runs ``body`` (a shell script) instead of Claude Code."""
    session = _session(tmp_path, _cli(tmp_path, body))
    try:
        with pytest.raises(BridgeError) as raised:
            async for _ in session.turn("hello", None, StderrTail()):
                pass
    finally:
        await session.close()
    assert raised.value.code == code
    return raised.value


@pytest.mark.parametrize(("body", "said"), [
    ("kill -KILL $$", "killed by SIGKILL"),
    ("sleep 0.2; kill -TERM $$", "killed by SIGTERM"),
])
async def test_a_cli_that_dies_at_start_names_the_signal(tmp_path: Path, body: str, said: str) -> None:
    error = await start_error(tmp_path, body, code="CLI_KILLED")  # as when it is killed later in a turn
    assert said in str(error), str(error)


@pytest.mark.parametrize(("body", "code"), [
    ("echo 'no such flag' >&2; exit 3", 3),
    # exits cleanly after the initialize request was written: the SDK itself would wait for an answer until its
    # timeout (a minute)
    ("echo 'no such flag' >&2; sleep 0.3; exit 0", 0),
])
async def test_a_cli_that_exits_at_start_says_its_exit_code(tmp_path: Path, body: str, code: int) -> None:
    error = await start_error(tmp_path, body)
    assert "killed by" not in str(error)
    assert "Control request timeout" not in str(error)
    assert re.search(f"exit code:? {code}\\b", str(error)), str(error)
    assert "no such flag" in (error.stderr_tail or "")
