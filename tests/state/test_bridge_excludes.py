"""What each bridge's state dir sync keeps (the CLI's sessions, the thread map) and leaves out (logins, logs)."""

from __future__ import annotations

import pytest

from ambient_runner.bridges.registry import create_bridge
from ambient_runner.settings import RunnerSettings
from ambient_runner.state.snapshot import ExcludeRules

CASES = {
    "gemini-cli": (["settings.json", "projects.json", "tmp/workspace/chats/session-1.jsonl",
                    "ambient-runner-sessions.json"],
                   ["oauth_creds.json", "google_accounts.json", "mcp-oauth-tokens.json", "tmp/workspace/logs/x.json"]),
    "codex-sdk": (["config.toml", "sessions/2026/11/30/rollout-1.jsonl", "state_5.sqlite",
                   "ambient-runner-sessions.json"],
                  ["auth.json", "log/codex-tui.log", "tmp/arg0/x"]),
    "claude": (["projects/-workspace/3f1c.jsonl", "ambient-runner-sessions.json"],
               [".credentials.json", "debug/latest.txt", "shell-snapshots/s.sh", "statsig/cache"]),
}


@pytest.mark.parametrize("runner_type", sorted(CASES))
def test_sessions_are_kept_and_credentials_left_out(runner_type, tmp_path):
    settings = RunnerSettings(runner_type=runner_type, runner_state_root=tmp_path, workspace_path=tmp_path / "w")
    rules = ExcludeRules(create_bridge(settings).state_files().left_out)
    kept, left_out = CASES[runner_type]
    assert [path for path in kept if rules.excluded(path)] == []
    assert [path for path in left_out if not rules.excluded(path)] == []
