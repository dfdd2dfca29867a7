"""End to end with the real Gemini CLI (on the scripted Gemini API): a run on runner A, A shuts down, runner B
starts on a fresh state root with the same S3 store, and the next run on the thread continues the conversation:
the model request of B's turn carries A's turn."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest

from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.state.store import open_store
from ambient_runner.state.sync import ARCHIVE
from tests.state.runners import synced_harness

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]


def user_texts(body: dict[str, Any]) -> list[str]:
    return [p["text"] for c in body["contents"] if c["role"] == "user" for p in c["parts"] if "text" in p]


async def test_a_replaced_pod_continues_a_gemini_conversation(bucket: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_CLI_MAX_ATTEMPTS", "1")
    url = f"s3://{bucket}/ns/session-1"
    workspace = tmp_path / "workspace"  # the same workspace path in both pods (/workspace in a pod)
    workspace.mkdir()
    options: dict[str, Any] = {"runner_type": "gemini-cli", "runner_scripted_model": True}

    async with synced_harness(url, workspace, GeminiCliBridge, **options) as a:
        first = await a.run("t-gem", "NOTOOL remember the word pineapple")
        session = a.bridge.sessions.get("t-gem")  # type: ignore[attr-defined]
        a_state = a.settings.state_dir
    assert first[-1]["type"] == "RUN_FINISHED" and session

    got = tmp_path / "stored.tar.gz"
    assert open_store(url).download(ARCHIVE, got)
    with tarfile.open(got, "r:gz") as tar:
        names = tar.getnames()
    assert "ambient-runner-sessions.json" in names
    assert any(n.startswith("tmp/") and "/chats/session-" in n for n in names), names

    async with synced_harness(url, workspace, GeminiCliBridge, **options) as b:
        assert b.settings.state_dir != a_state
        second = await b.run("t-gem", "NOTOOL which word did I ask you to remember?")
        assert b.bridge.sessions.get("t-gem") == session  # type: ignore[attr-defined]
        server = b.bridge.scripted  # type: ignore[attr-defined]
        turns = [r.body for r in server.requests if ":streamGenerateContent" in r.path]
    assert second[-1]["type"] == "RUN_FINISHED", second[-1]
    assert user_texts(turns[-1])[-2:] == ["NOTOOL remember the word pineapple",
                                          "NOTOOL which word did I ask you to remember?"]
