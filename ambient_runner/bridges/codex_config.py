"""Codex's configuration: ``$CODEX_HOME/config.toml``, as the codex-sdk runner writes it for its app-server (CODEX_HOME
= the runner's state dir) and the ACP runner for codex-acp's Codex (CODEX_HOME in the agent's HOME).

Choices, and why:

* ``approval_policy = "never"``: nobody is there to approve; the pod is the sandbox.
* ``sandbox_mode = "danger-full-access"``: Codex's own sandbox (bubblewrap/landlock) needs user namespaces and
  mount rights that a normal (non-privileged, seccomp-restricted) container does not grant, so
  ``workspace-write`` fails there with "bwrap: ... Operation not permitted". The container already isolates
  the agent; the agent must be able to write the workspace and run the user's tools.
* analytics, feedback, update checks off, and every plugin / app / remote feature off: with them on, Codex
  clones ``github.com/openai/plugins`` and calls ``api.github.com`` at start (measured, research section 2).
* bounded retries (``request_max_retries`` / ``stream_max_retries``) so a failing provider becomes a RUN_ERROR
  quickly instead of minutes of silent retrying.
* a custom model provider (``ambient``) for API-key auth: base URL from ``OPENAI_BASE_URL`` (or the scripted
  server, or ``https://api.openai.com/v1``) and the key read from an env var named by ``env_key``, so the key
  never lands in a file. ChatGPT-login auth (``auth.json``) uses Codex's built-in ``openai`` provider.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MODEL = "gpt-5.5"  # a slug in the pinned codex's bundled model catalog (docs/runners.md#versions)
PROVIDER_ID = "ambient"
OPENAI_API_BASE = "https://api.openai.com/v1"
SANDBOX_MODE = "danger-full-access"

DISABLED_FEATURES = (
    "plugins", "remote_plugin", "plugin_sharing", "recommended_plugins", "apps", "tool_suggest",
    "api_key_model_discovery", "in_app_updates", "daemon_auto_start", "skill_mcp_dependency_install",
    "unbounded_connection_retries", "browser_use", "browser_use_external", "computer_use", "in_app_browser",
    "realtime_conversation", "image_generation", "workspace_dependencies",
)


@dataclass(frozen=True)
class CodexConfigFile:
    """Everything that goes into config.toml."""

    model: str = DEFAULT_MODEL
    base_url: str | None = None  # None: the built-in provider (ChatGPT login)
    env_key: str = "OPENAI_API_KEY"
    request_max_retries: int = 1
    stream_max_retries: int = 1
    stream_idle_timeout_ms: int = 300_000
    extra: Mapping[str, object] = field(default_factory=dict)
    mcp_lines: tuple[str, ...] = ()  # [mcp_servers.<name>] tables (ambient_runner.mcp.render.codex_servers)

    def render(self) -> str:
        lines = [
            "# Written by ambient-runner at every start; edits are overwritten.",
            f"model = {_toml(self.model)}",
            'approval_policy = "never"',
            f"sandbox_mode = {_toml(SANDBOX_MODE)}",
            "check_for_update_on_startup = false",
            "hide_agent_reasoning = false",
            'model_reasoning_summary = "auto"',
        ]
        if self.base_url is not None:
            lines.append(f"model_provider = {_toml(PROVIDER_ID)}")
        lines += [f"{key} = {_toml(value)}" for key, value in self.extra.items()]
        lines += ["", "[analytics]", "enabled = false", "", "[feedback]", "enabled = false", "", "[features]"]
        lines += [f"{name} = false" for name in DISABLED_FEATURES]
        lines += ["", "[tools.update_plan]", "enabled = true"]
        if self.base_url is not None:
            lines += [
                "", f"[model_providers.{PROVIDER_ID}]",
                f"name = {_toml(PROVIDER_ID)}",
                f"base_url = {_toml(self.base_url)}",
                'wire_api = "responses"',
                f"env_key = {_toml(self.env_key)}",
                f"request_max_retries = {self.request_max_retries}",
                f"stream_max_retries = {self.stream_max_retries}",
                f"stream_idle_timeout_ms = {self.stream_idle_timeout_ms}",
            ]
        lines += self.mcp_lines
        return "\n".join(lines) + "\n"

    def session_overrides(self, untrusted: tuple[Path, ...] = ()) -> list[str]:
        """The same choices as ``-c key=value`` arguments of ``codex app-server``. Codex trusts the workspace on the
        first thread and then loads its ``.codex/config.toml`` above ``config.toml``; command-line values rank
        above both, so a repository cannot change the approval policy, the sandbox, the provider or the features.
        (Codex itself ignores a project's ``model_provider(s)``, ``openai_base_url`` and ``profile``.) ``untrusted``:
        the folders where the agent works (the workspace, the active workflow's folder), marked untrusted above the
        trust Codex records for them itself, so that their ``.codex/config.toml`` (MCP servers, hooks, ``notify``,
        environment) is not loaded at all: the trust rule (docs/workflows.md)."""
        values: dict[str, object] = {
            "approval_policy": "never", "sandbox_mode": SANDBOX_MODE, "check_for_update_on_startup": False,
            "analytics.enabled": False, "feedback.enabled": False,
            **{f"features.{name}": False for name in DISABLED_FEATURES},
            "tools.update_plan.enabled": True,  # the plan tool (off by default): its updates are the plan state
        }
        if self.base_url is not None:
            values |= {"model_provider": PROVIDER_ID, f"model_providers.{PROVIDER_ID}.base_url": self.base_url,
                       f"model_providers.{PROVIDER_ID}.env_key": self.env_key}
        arguments = [arg for key, value in values.items() for arg in ("-c", f"{key}={_toml(value)}")]
        if untrusted:
            folders = dict.fromkeys(str(folder) for folder in untrusted)  # a key twice is no TOML table at all
            table = ", ".join(f'{_toml(folder)} = {{ trust_level = "untrusted" }}' for folder in folders)
            arguments += ["-c", f"projects={{ {table} }}"]
        return arguments

    def write(self, codex_home: Path) -> Path:
        codex_home.mkdir(parents=True, exist_ok=True)
        path = codex_home / "config.toml"
        tmp = path.with_name(f".config.toml.{os.getpid()}.tmp")
        tmp.write_text(self.render())
        os.replace(tmp, path)
        return path


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string
