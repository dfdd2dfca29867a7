"""How a Claude Code process that stopped mid-turn ended decides the RUN_ERROR code: its exit status (negative: a
signal) as the runner saw it, else the exit code the SDK's error reports; never words in a message."""

from __future__ import annotations

from pathlib import Path

import pytest

from ambient_runner.bridges.claude.session import ClaudeSession, _End
from ambient_runner.process.stderr_tail import StderrTail


class EndedProcess:
    """The transport's view of a CLI process that has ended with ``status`` (None: not seen to end)."""

    def __init__(self, status: int | None) -> None:
        self.status = status

    async def exit_code(self, wait: float = 2.0) -> int | None:
        return self.status


def _session(tmp_path: Path) -> ClaudeSession:
    never_started = lambda *args: None  # noqa: E731 - no CLI is started here
    return ClaudeSession("t-1", never_started, session_id=None, on_session_id=lambda _: None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("error", "status", "code", "said"), [
    (None, -9, "CLI_KILLED", "killed by SIGKILL"),  # the SDK saw only the output end
    (ConnectionResetError("write failed"), -15, "CLI_KILLED", "killed by SIGTERM"),
    (RuntimeError("Command failed with exit code -9"), None, "CLI_KILLED", "killed by SIGKILL"),  # the SDK's word
    (RuntimeError("a tool printed: killed by the OOM killer"), 1, "CLI_EXITED", ""),  # words do not decide
    (None, 0, "CLI_EXITED", ""),
    (None, None, "CLI_EXITED", ""),
])
async def test_the_code_comes_from_how_the_process_ended(tmp_path: Path, error: BaseException | None,
                                                         status: int | None, code: str, said: str) -> None:
    process = EndedProcess(status)
    failure = await _session(tmp_path)._exit_error(_End(error), process, StderrTail())  # type: ignore[arg-type]
    assert failure.code == code, failure.message
    assert said in failure.message
