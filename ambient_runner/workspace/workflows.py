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
from typing import Any

from ambient_runner.workspace import files
from ambient_runner.workspace.git import GitTokens
from ambient_runner.workspace.paths import PathRefused, Workspace
from ambient_runner.workspace.repos import check_branch, check_remote_url, clone, move_in, remove_in, repo_name

log = logging.getLogger(__name__)
NO_ORDER = 2**31 - 1


@dataclass(frozen=True)
class WorkflowSpec:
    git_url: str
    branch: str = "main"
    path: str = ""


class Workflows:
    def __init__(self, workspace: Workspace, active: WorkflowSpec | None = None) -> None:
        self.workspace = workspace
        self.active = active
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

    def config(self, *, strict: bool = False) -> dict[str, Any]:
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

    def instructions_for(self, thread_id: str) -> str:
        """The active workflow's ``systemPrompt`` for a thread's next turn, once per thread after each change.

        The three CLIs fix their system prompt when they start and keep it across resumed sessions, so the workflow's
        instructions join the conversation as the preamble of its next turn instead (they stay in its history).
        """
        instructions = self.prompt("systemPrompt")
        if not instructions or self._instructed.get(thread_id) == self.changes:
            return ""
        self._instructed[thread_id] = self.changes
        return f"<workflow-instructions>\n{instructions}\n</workflow-instructions>\n\n"

    def metadata(self) -> dict[str, Any]:
        """``{commands, agents, config}`` for the platform's workflow picker."""
        folder = self.active_dir()
        config = self.config(strict=True)
        commands, agents = [], []
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


def front_matter(text: str) -> dict[str, str]:
    """``key: value`` pairs of a markdown text's leading ``---`` block."""
    if not text.startswith("---\n") or (end := text.find("\n---", 4)) < 0:
        return {}
    pairs = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            pairs[key.strip()] = value.strip().strip("\"'")
    return pairs
