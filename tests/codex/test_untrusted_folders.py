"""The folders where the agent works are untrusted above Codex's own record (the trust rule, docs/workflows.md): the
``-c projects=...`` override is one valid TOML table whatever the folders (the workspace and the agent's folder are
the same one without a workflow: a key twice would make the whole value no table, and Codex would not start)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from ambient_runner.bridges.codex_sdk.config import CodexConfigFile


def projects_override(untrusted: tuple[Path, ...]) -> dict[str, object]:
    arguments = CodexConfigFile(base_url="http://127.0.0.1:9/v1").session_overrides(untrusted)
    (value,) = [arg for arg in arguments if arg.startswith("projects=")]
    return tomllib.loads(value)["projects"]


def test_each_folder_once_and_every_one_untrusted() -> None:
    workspace, flow = Path("/workspace"), Path('/workspace/workflows/a "quoted" name.x')
    assert projects_override((workspace, workspace)) == {"/workspace": {"trust_level": "untrusted"}}
    assert projects_override((workspace, flow)) == {"/workspace": {"trust_level": "untrusted"},
                                                   str(flow): {"trust_level": "untrusted"}}
    assert not [a for a in CodexConfigFile().session_overrides() if a.startswith("projects=")]
