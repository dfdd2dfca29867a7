"""Workflows: a git repository (or a folder of one) in ``/workspace/workflows/<name>``, named as the platform's
init container names it (the URL's last segment without ``.git``), with ``.ambient/ambient.json`` (``name``,
``description``, ``systemPrompt``, ``startupPrompt``, ``artifactsDir``, ``rubric``) and ``.claude/commands/*.md``,
``.claude/agents/*.md`` (YAML front matter).

``POST /workflow`` is single-flight and idempotent: the operator calls it every ~5 s (10 s timeout) until it gets 200,
so a workflow that is already there (the init container usually cloned it) answers at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from ag_ui_cli_common.json_types import JsonObject
from ambient_runner.workspace import files
from ambient_runner.workspace.git import GitTokens
from ambient_runner.workspace.paths import PathRefused, Workspace
from ambient_runner.workspace.repos import check_branch, check_remote_url, clone, move_in, remove_in, repo_name
from ambient_runner.workspace.workflow_files import MAX_FILE_BYTES, SubAgent, WorkflowFiles, front_matter

log = logging.getLogger(__name__)
NO_ORDER = 2**31 - 1


class Command(TypedDict):
    """A workflow's command (``.claude/commands/<id>.md``) as the workflow picker lists it."""

    id: str
    name: str
    description: str
    slashCommand: str
    icon: str
    order: int


class AgentEntry(TypedDict):
    """A workflow's sub-agent (``.claude/agents/<id>.md``) as the workflow picker lists it."""

    id: str
    name: str
    description: str
    tools: str


@dataclass(frozen=True)
class AgentPlace:
    """Where the agent works: its CLI's working folder (the active workflow's, else the workspace root) and the
    folders its file tools must reach besides (the workspace root, when the CLI works in a workflow)."""

    cwd: Path
    also: tuple[Path, ...] = ()
    agents: tuple[SubAgent, ...] = ()  # the workflow's sub-agents (Claude Code takes them as its own)
    generation: int = 0  # counts the workflow switches: a CLI started in an earlier one's folder starts again


@dataclass(frozen=True)
class CarriedInstructions:
    """The instruction files (``GEMINI.md``, ``AGENTS.md``) the runner hands the CLI itself, in the preamble: from the
    workspace root, which the CLI does not reach from a workflow's folder, and from that folder; ``always``: also
    without a workflow, for a CLI that reads none itself (Codex: the folders it works in are untrusted);
    ``from_folder``: False when the workflow folder's are in the preamble already (its ``CLAUDE.md``)."""

    files: tuple[str, ...] = ()
    always: bool = False
    from_folder: bool = True


@dataclass(frozen=True)
class WorkflowSpec:
    git_url: str
    branch: str = "main"
    path: str = ""


class Workflows:
    def __init__(self, workspace: Workspace, active: WorkflowSpec | None = None,
                 carried: CarriedInstructions = CarriedInstructions()) -> None:
        self.workspace = workspace
        self.active = active
        self.carried = carried
        self._lock = asyncio.Lock()
        self.changes = 0  # how many times the active workflow changed at run time
        self._instructed: dict[str, int] = {}  # thread -> the change whose instructions it got

    def directory(self, spec: WorkflowSpec) -> Path:
        """``workflows/<name>`` as written (not followed, should it be a symlink); refused when ``workflows`` is
        a link."""
        return self.workspace.top_folder("workflows") / repo_name(spec.git_url, None)

    async def select(self, spec: WorkflowSpec, tokens: GitTokens) -> tuple[Path, bool]:
        """Make ``spec`` the active workflow; ``(its directory, whether it changed)``."""
        check_remote_url(spec.git_url, self.workspace)
        check_branch(spec.branch or "main")
        if spec.path and (".." in Path(spec.path).parts or spec.path.startswith("/")):
            raise PathRefused("path must be a folder inside the workflow repository")
        async with self._lock:
            final = self.directory(spec)
            if self.active == spec and final.is_dir() and not final.is_symlink():
                return final, False
            temporary = await clone(self.workspace, spec.git_url, "workflows", final.name, spec.branch or None,
                                    tokens, depth=1, temporary_suffix=".workflow-tmp")
            try:
                await asyncio.to_thread(_install, self.workspace, temporary, spec.path, final.name)
            finally:
                await asyncio.to_thread(remove_in, self.workspace, "workflows", temporary)
            changed = self.active != spec
            self.active = spec
            self.changes += changed
            return final, changed

    def active_dir(self) -> Path | None:
        if self.active is None:
            return None
        try:
            final = self.directory(self.active)
        except PathRefused:
            return None
        return final if final.is_dir() and not final.is_symlink() else None

    def _relative(self, folder: Path, *parts: str) -> str:
        return "/".join([folder.relative_to(self.workspace.root).as_posix(), *parts])

    def config(self, *, strict: bool = False) -> JsonObject:
        """The active workflow's ``ambient.json`` (empty when there is none or it is unreadable); a link out of the
        workspace is refused (``LinkRefused`` when ``strict``, else empty and a warning)."""
        folder = self.active_dir()
        if folder is None:
            return {}
        try:
            text = files.read_text(self.workspace, self._relative(folder, ".ambient", "ambient.json"))
        except PathRefused as exc:
            if strict:
                raise
            log.warning("the workflow's ambient.json is not read: %s", exc)
            return {}
        try:
            data = json.loads(text) if text is not None else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def prompt(self, key: str) -> str:
        value = self.config().get(key)
        return value.strip() if isinstance(value, str) else ""

    def would_change(self, spec: WorkflowSpec) -> bool:
        """Whether selecting ``spec`` would replace the active workflow (or install a missing folder)."""
        return self.active != spec or self.active_dir() is None

    def place(self) -> AgentPlace:
        """Where the agent works now: in the active workflow's folder (reaching the workspace root too), else in
        the workspace root."""
        folder = self.active_dir()
        if folder is None:
            return AgentPlace(self.workspace.root)
        return AgentPlace(folder, (self.workspace.root,), WorkflowFiles.read_agents(self.workspace, folder),
                          self.changes)

    def files(self) -> WorkflowFiles | None:
        """The active workflow's commands, skills, sub-agents and CLAUDE.md, read now."""
        folder = self.active_dir()
        return WorkflowFiles.read(self.workspace, folder) if folder is not None else None

    def expand(self, text: str) -> str:
        """The person's message as the agent gets it (``WorkflowFiles.expand``): unchanged without a workflow, and
        unless it runs one of the workflow's commands or skills or mentions one of its sub-agents."""
        if not text.startswith("/") and "@" not in text:
            return text
        found = self.files()
        return found.expand(text) if found is not None else text

    def instructions_for(self, thread_id: str) -> str:
        """The active workflow's preamble for a thread's next turn, once per thread after each change: where the
        agent works, the ``systemPrompt``, the workflow's ``CLAUDE.md``, its skills and sub-agents.

        The three CLIs fix their system prompt when they start and keep it across resumed sessions, so the workflow's
        instructions join the conversation as the preamble of its next turn instead (they stay in its history).
        """
        folder = self.active_dir()
        if self._instructed.get(thread_id) == self.changes or (folder is None and not self.carried.always):
            return ""
        self._instructed[thread_id] = self.changes
        if folder is None:  # no workflow: the instruction files the CLI does not read itself, if any
            carried = self._carried(self.workspace.root)
            return "\n\n".join(carried) + "\n\n" if carried else ""
        return f"<workflow>\n{self._preamble(folder)}\n</workflow>\n\n"

    def not_instructed(self, thread_id: str) -> None:
        """The thread's run that carried the preamble failed (the CLI may never have taken it in, say it could not
        start): its next turn carries the preamble again."""
        self._instructed.pop(thread_id, None)

    def _carried(self, *folders: Path) -> list[str]:
        """Each carried instruction file of ``folders`` that has text, as a block naming it."""
        blocks = []
        for folder in folders:
            for name in self.carried.files:
                try:
                    text = files.read_text(self.workspace, self._relative(folder, name), MAX_FILE_BYTES)
                except (PathRefused, OSError):
                    continue
                if text and text.strip():
                    blocks.append(f"<workspace-instructions file=\"{folder / name}\">\n{text.strip()}\n"
                                  "</workspace-instructions>")
        return blocks

    def _preamble(self, folder: Path) -> str:
        root = self.workspace.root
        artifacts = str(self.config().get("artifactsDir") or "artifacts").strip("/") or "artifacts"
        found = WorkflowFiles.read(self.workspace, folder)
        blocks = ["\n".join([
            f"Working directory: {folder} (the active workflow's folder: your shell starts here, and the "
            "workflow's paths and scripts are relative to it; what you write here is replaced when the person "
            "switches to another workflow)",
            f"Workspace root: {root}", f"Repositories: {root / 'repos'}",
            f"Results (artifacts): {root / artifacts} (write what you produce there)"])]
        if instructions := self.prompt("systemPrompt"):
            blocks.append(f"<workflow-instructions>\n{instructions}\n</workflow-instructions>")
        if found.instructions:
            blocks.append(f"<workflow-claude-md>\n{found.instructions}\n</workflow-claude-md>")
        if listing := found.listing():
            blocks.append(listing)
        blocks += self._carried(root, folder) if self.carried.from_folder else self._carried(root)
        return "\n\n".join(blocks)

    def metadata(self) -> dict[str, object]:
        """``{commands, agents, config}`` for the platform's workflow picker."""
        folder = self.active_dir()
        config = self.config(strict=True)
        commands: list[Command] = []
        agents: list[AgentEntry] = []
        if folder is not None:
            for name, meta in self._markdown(folder, "commands"):
                stem = name.removesuffix(".md")
                try:
                    order = int(meta.get("order", ""))
                except ValueError:
                    order = NO_ORDER
                commands.append({"id": stem, "name": meta.get("displayName") or stem,
                                 "description": meta.get("description", ""), "slashCommand": f"/{stem}",
                                 "icon": meta.get("icon", ""), "order": order})
            commands.sort(key=lambda c: (c["order"], c["id"]))
            for name, meta in self._markdown(folder, "agents"):
                agents.append({"id": name.removesuffix(".md"), "name": meta.get("name", ""),
                               "description": meta.get("description", ""), "tools": meta.get("tools", "")})
        shown = {key: config.get(key, "") for key in ("name", "description", "systemPrompt", "artifactsDir")}
        if config.get("rubric"):
            shown["rubric"] = config["rubric"]
        return {"commands": commands, "agents": agents, "config": shown}

    def _markdown(self, folder: Path, kind: str) -> list[tuple[str, dict[str, str]]]:
        """``(file name, front matter)`` of ``.claude/<kind>/*.md``, read beneath the workspace (links out refused)."""
        relative = self._relative(folder, ".claude", kind)
        found = []
        for name in files.names_in(self.workspace, relative):
            if name.endswith(".md"):
                text = files.read_text(self.workspace, f"{relative}/{name}")
                if text is not None:
                    found.append((name, front_matter(text)))
        return found


def _install(workspace: Workspace, temporary: str, folder: str, name: str) -> None:
    """Move the clone (or its ``folder``) to ``workflows/<name>``, all through the ``workflows`` folder's descriptor;
    a folder reached through a symlink is refused."""
    clone_dir = workspace.root / "workflows" / temporary
    source = clone_dir / folder if folder else clone_dir
    inside = clone_dir.resolve()
    if not source.is_dir() or (source.resolve() != inside and inside not in source.resolve().parents) or any(
            p.is_symlink() for p in [source, *source.parents] if p == clone_dir or clone_dir in p.parents):
        raise PathRefused(f"the workflow repository has no folder {folder!r}")
    remove_in(workspace, "workflows", name)
    move_in(workspace, "workflows", f"{temporary}/{folder}" if folder else temporary, name)

