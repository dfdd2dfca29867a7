"""The ``ClaudeAgentOptions`` (and the CLI environment) of one thread's Claude Code process.

Decisions:

* ``permission_mode="default"`` with ``can_use_tool``: every request Claude Code's rules would put to a person
  reaches the runner's gate (``approvals``), which allows it at once under the ``auto`` policy and makes it an
  interrupt under ``ask`` (``IS_SANDBOX=1`` is kept: Claude Code refuses bypassPermissions as root otherwise).
* ``setting_sources=[]``: the user's repository settings (``.claude/settings*.json``: their ``env`` overrides the
  CLI's environment, so they could move the model traffic and swap the key; hooks, permission rules; ``.mcp.json``)
  are never loaded. ``CLAUDE_SETTING_SOURCES=user`` opts into the user settings of the state dir only; the
  repository's sources (``project``, ``local``) are refused. The repository's instructions, ``CLAUDE.md`` and
  ``.claude/CLAUDE.md``, are read by the runner and appended to the system prompt (``project_instructions``).
* ``system_prompt`` is the ``claude_code`` preset: the SDK sends ``--system-prompt ""`` when it is left None.
* ``CLAUDE_CONFIG_DIR`` = the state dir (sessions live there, synced to the store); ``HOME`` = a directory
  inside it, never the machine user's home.
* Environment: the SDK starts the CLI with ``{**os.environ, **options.env}`` and has no way to drop a variable,
  so every runner variable that is not in the allowlisted CLI environment is overridden with an empty value
  (``AGUI_TOKEN``, storage credentials and other runners' keys never reach the CLI or its tools).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ambient_runner.process.environment import agent_environment
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace.workflow_files import INSTRUCTION_FILES, MAX_FILE_BYTES
from ambient_runner.workspace.workflows import AgentPlace

if TYPE_CHECKING:  # the SDK is imported by the first turn, not for readiness (ambient_runner.bridges.lazy)
    from claude_agent_sdk import CanUseTool, ClaudeAgentOptions
    from claude_agent_sdk.types import EffortLevel, SettingSource, SystemPromptPreset

EFFORTS: tuple[EffortLevel, ...] = ("low", "medium", "high", "xhigh", "max")  # the SDK's EffortLevel (--effort)
# Variables the SDK sets itself: blanking them would override the SDK's value.
SDK_OWNED = ("CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SDK_READS_SESSION_STATE", "CLAUDE_AGENT_SDK_")
QUIET_FLAGS = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1",
    "IS_SANDBOX": "1",
}


def bundled_cli() -> Path | None:
    """The ``claude`` binary in the SDK's wheel, found without importing the SDK."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "_bundled" / "claude"
    return path if path.is_file() else None


def find_cli(settings: RunnerSettings) -> Path | None:
    """``CLAUDE_CLI_PATH``, else the SDK's bundled binary, else ``claude`` on PATH."""
    configured = settings.claude_cli_path.strip()
    if configured:
        return Path(configured) if Path(configured).is_file() else None
    found = bundled_cli() or shutil.which("claude")
    return Path(found) if found else None


def process_group_launcher(cli: Path, directory: Path) -> Path:
    """A two-line launcher that ``exec``s the CLI through ``setsid``, so it leads its own process group.

    The SDK starts the CLI with ``anyio.open_process`` in the runner's process group and signals only its pid;
    with its own group the bridge can end the CLI and every tool process it started (``killpg``). The launched
    process keeps the same pid (``setsid`` does not fork when its caller is not a group leader).
    """
    setsid = shutil.which("setsid")
    if setsid is None:
        return cli
    directory.mkdir(parents=True, exist_ok=True)
    launcher = directory / "claude"
    launcher.write_text(f'#!/bin/sh\nexec {setsid} "{cli}" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return launcher


def launcher_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"ambient-runner-claude-{os.getpid()}"


def claude_environment(settings: RunnerSettings, auth_env: Mapping[str, str],
                       environ: Mapping[str, str] | None = None, passthrough: Iterable[str] = ()) -> dict[str, str]:
    """``passthrough``: runner variables the CLI needs too (those the MCP servers' ``${VAR}`` refer to)."""
    state_dir = settings.state_dir
    extra = {
        **QUIET_FLAGS,
        "CLAUDE_CONFIG_DIR": str(state_dir),
        "HOME": str(state_dir / "home"),
        "CLAUDE_CODE_MAX_RETRIES": str(settings.claude_code_max_retries),
        **auth_env,
    }
    env = agent_environment(extra, passthrough)
    for name in (os.environ if environ is None else environ):
        if name not in env and not name.startswith(SDK_OWNED):
            env[name] = ""  # the SDK merges os.environ under options.env: hide the runner's own variables
    return env




def setting_sources(settings: RunnerSettings) -> list[SettingSource]:
    """Only ``user`` (the state dir's settings): a repository's settings would decide the model endpoint and key."""
    raw = settings.claude_setting_sources
    return ["user"] if "user" in {s.strip() for s in raw.split(",")} else []


def project_instructions(workspace: Path) -> str:
    """The repository's ``CLAUDE.md`` files (what Claude Code would load as project memory), each bounded."""
    parts = []
    for name in INSTRUCTION_FILES:
        path = workspace / name
        try:
            if path.is_file() and path.resolve().is_relative_to(workspace.resolve()):
                text = path.read_bytes()[:MAX_FILE_BYTES].decode("utf-8", "replace").strip()
                if text:
                    parts.append(f"Contents of {name} (project instructions):\n\n{text}")
        except OSError:
            continue
    return "\n\n".join(parts)


def build_options(settings: RunnerSettings, *, cli_path: Path, env: dict[str, str], model: str | None,
                  resume: str | None, stderr: Callable[[str], None], effort: str | None = None,
                  mcp_servers: dict[str, Any] | None = None, can_use_tool: CanUseTool | None = None,
                  place: AgentPlace | None = None) -> ClaudeAgentOptions:
    """``mcp_servers``: ``ambient_runner.mcp.render.claude_servers`` (passed in memory, ``${VAR}`` kept: Claude
    Code expands them from its environment). ``effort``: the run's reasoning effort (``--effort``). ``place``: where
    it works (a workflow's folder, the workspace root added for its file tools) and the workflow's sub-agents, given
    through the SDK (``agents``) while ``setting_sources`` keeps the workflow's settings out."""
    from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions

    place = place or AgentPlace(Path(settings.workspace_path))
    return ClaudeAgentOptions(
        cli_path=cli_path,
        cwd=place.cwd,
        add_dirs=list(place.also),
        agents={agent.id: AgentDefinition(description=agent.description or agent.mention, prompt=agent.body,
                                          tools=[t.strip() for t in agent.tools.split(",") if t.strip()] or None)
                for agent in place.agents} or None,
        env=env,
        model=model,
        resume=resume,
        permission_mode="default",  # every permission request goes to can_use_tool (the runner's gate)
        can_use_tool=can_use_tool,
        include_partial_messages=True,
        setting_sources=setting_sources(settings),
        system_prompt=_system_prompt(project_instructions(Path(settings.workspace_path))),
        stderr=stderr,
        max_buffer_size=settings.runner_max_line_bytes,
        mcp_servers=mcp_servers or {},
        effort=_effort_level(effort),
        extra_args={"replay-user-messages": None},  # when the CLI takes a steered message in (session.py)
    )


def _effort_level(effort: str | None) -> EffortLevel | None:
    """The run's effort as the SDK's type; the runner options accept only ``EFFORTS``."""
    return next((level for level in EFFORTS if level == effort), None)


def _system_prompt(instructions: str) -> SystemPromptPreset:
    prompt: SystemPromptPreset = {"type": "preset", "preset": "claude_code"}
    if instructions:
        prompt["append"] = instructions
    return prompt


def project_key(cwd: Path) -> str:
    """Claude Code's folder name for the sessions of ``cwd`` (``projects/<key>``): every character other than an
    ASCII letter or digit becomes ``-``."""
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in str(cwd))


def carry_session(config_dir: Path, session_id: str, cwd: Path) -> None:
    """Make ``session_id`` resumable in ``cwd``: Claude Code looks for it only in ``projects/<cwd's key>``, so after
    a workflow switch its newest transcript (from the folder the thread worked in before) is copied there."""
    projects = Path(config_dir) / "projects"
    name = f"{session_id}.jsonl"
    target = projects / project_key(cwd) / name
    found = [p for p in projects.glob(f"*/{name}") if p.is_file() and not p.is_symlink()]
    newest = max(found, key=lambda p: p.stat().st_mtime_ns, default=None)
    if newest is None or newest == target:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(newest, target)
