"""What an ACP preset is (``AcpPreset``): how the runner starts an agent, points it at the model proxy, maps the
approval policies to its session modes, and where its state lives; ``presets`` holds the presets themselves."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ambient_runner.bridges.acp.model_apis import ModelApiKind, ModelEndpoint
from ambient_runner.bridges.acp_client.moves import FolderMove, ReopenThere
from ambient_runner.bridges.acp_client.turns import SessionMode, no_mode
from ambient_runner.workspace.workflows import CarriedInstructions

REPO_ROOT = Path(__file__).resolve().parents[3]
# Every agent: no telemetry, no update check, no error reporting, nothing fetched at start.
QUIET = {"DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
         "NO_UPDATE_NOTIFIER": "1", "NO_BROWSER": "1", "DO_NOT_TRACK": "1", "NO_COLOR": "1"}


@dataclass(frozen=True)
class AgentSetup:
    """What a preset's environment is made from."""

    endpoint: ModelEndpoint
    home: Path  # the agent's HOME (under the runner's state dir)
    model: str  # the model the session starts on
    models: tuple[str, ...]  # the models the deployment offers
    command: tuple[str, ...] = ()  # the agent's command line (its executable first)
    max_retries: int = 2  # its retries of a failed model request, where it has a setting for them


@dataclass(frozen=True)
class AcpPreset:
    name: str  # ACP_AGENT
    display: str  # in messages ("The opencode agent") and the question card ("opencode wants to ...")
    executable: str  # looked up in the repo's node_modules/.bin, then on PATH
    arguments: tuple[str, ...]
    model_api: ModelApiKind
    default_model: str
    environment: Callable[[AgentSetup, ModelApiKind], dict[str, str]]
    model_id: Callable[[str], str] = lambda model: model  # the runner's model name -> the agent's model id
    package: str = ""  # the npm package that brings it (for a missing agent's message)
    own_model: bool = False  # the agent picks its model itself: the runner switches it only when a run names one
    mode: SessionMode = no_mode  # (approval policy, plan) -> its session mode (None: it always asks)
    session_meta: Mapping[str, Any] = field(default_factory=dict)  # ``_meta`` of session/new and session/load
    state_excludes: tuple[str, ...] = ()  # its logs and caches under HOME (relative to the state dir)
    model_apis: tuple[str, ...] = ()  # the model APIs it can speak (``ACP_AGENT_MODEL_API``; empty: any)
    title: str = ""  # given to each new session (``session/set_title``): it then asks no model for one
    ends_commands: bool = True  # it ends its running commands on ``session/cancel`` (else the runner does)
    approval_note: str = ""  # what ``ask`` makes wait, when less than every command and edit (``/capabilities``)
    resume_first: bool = False  # a session it no longer holds is resumed (``session/resume``), not loaded
    # each session is a process of its own (Claude Code over ACP): at most RUNNER_MAX_LIVE_CLIS open, the least
    # recently used idle one closed (``session/close``) before another opens
    session_processes: bool = False
    # the instruction files the runner carries in the preamble, those the agent does not read itself where it works
    carried: CarriedInstructions = CarriedInstructions()
    moves: FolderMove = field(default_factory=ReopenThere)  # how a thread's session goes on in a new folder

    def speaks(self, api: ModelApiKind) -> bool:
        return not self.model_apis or api.name in self.model_apis

    def argv(self, command: str = "") -> list[str] | None:
        """The command line (``ACP_AGENT_COMMAND`` wins), None when the executable is not found."""
        if command.strip():
            return shlex.split(command)
        if not self.executable:
            return None
        bundled = REPO_ROOT / "node_modules" / ".bin" / self.executable
        found = str(bundled) if os.access(bundled, os.X_OK) else shutil.which(self.executable)
        return [found, *self.arguments] if found else None
