"""What a workflow gives the agent, read from its folder: its commands, skills, sub-agents and instructions.

A workflow is written for Claude Code (``.claude/commands/*.md``, ``.claude/skills/<name>/SKILL.md``,
``.claude/agents/*.md``, ``CLAUDE.md``); the runner gives all three CLIs the same thing from these files
(docs/workflows.md):

* ``/<name> <text>`` for one of its commands (or skills) becomes that file's body, front matter removed, with its
  placeholders filled as the pinned Claude Code fills a project command's (``fill_arguments``).
* ``@<agent name>`` (as the platform's UI writes it: the front-matter name before `` - ``) or ``@<file id>`` brings
  that sub-agent's instructions into the turn.
* the skills' and agents' names and descriptions, and ``CLAUDE.md``, go into the workflow's preamble.

Every file is read beneath the workspace (a link out of it is not followed), bounded in size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ambient_runner.workspace import files
from ambient_runner.workspace.paths import PathRefused, Workspace

MAX_FILE_BYTES = 256 * 1024
INSTRUCTION_FILES = ("CLAUDE.md", ".claude/CLAUDE.md")
_SLASH = re.compile(r"\A/([A-Za-z0-9][\w.:-]*)(?:[ \t]+|\n|\Z)(.*)\Z", re.DOTALL)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*(?:\n|\Z)", re.DOTALL)


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


def body_of(text: str) -> str:
    """A markdown text without its leading ``---`` front matter."""
    return _FRONT_MATTER.sub("", text, count=1).strip("\n")


# Claude Code's rules for a command's placeholders (the pinned CLI's own, read from its bundle): ``$ARGUMENTS`` is the
# text after the name; ``$ARGUMENTS[n]`` and ``$n`` the n-th of its words (from 0; left as written when there is no
# such word); ``\$`` before one of them, and an ``awk '{print $n}'`` program, keep their ``$`` as written; with
# nothing replaced, the text is appended as ``ARGUMENTS: <text>``.
_KEPT = "\x00"  # a "$" that no placeholder rule may touch (a kept one, or one inside a filled-in value)
_ESCAPED = re.compile(r"(?<!\\)\\\$(?=\d|ARGUMENTS)", re.ASCII)
_AWK_PRINT = re.compile(r"""awk(?: +-F *(?:'[^'$\n]*'|"[^"$\n]*"|[^\s'"$]+))? +'\{ *print *\$\d+(?:[ ,]*\$\d+)* *\}'""",
                        re.ASCII)
_INDEXED = re.compile(r"\$ARGUMENTS\[(\d+)\]", re.ASCII)
_POSITIONAL = re.compile(r"\$(\d+)(?!\w)", re.ASCII)
_WORD_CHAR = re.compile(r"\w", re.ASCII)


def split_arguments(text: str) -> list[str]:
    """The words of a command's arguments as Claude Code splits them: blanks separate, quotes group (and go, unless
    the word began with ``{`` or ``[``), a backslash escapes the next non-word character."""
    words: list[str] = []
    word: str | None = None
    raw = False  # the word began like JSON: its quotes stay
    text, at = text.strip(), 0
    while at < len(text):
        char, end = text[at], at + 1
        if char in " \t\r\n":
            if word is not None:
                words.append(word)
            word, raw = None, False
        elif char in "'\"":
            while end < len(text) and text[end] != char:
                end += 2 if char == '"' and text[end] == "\\" else 1
            word = (word or "") + (text[at + 1:end] if end < len(text) and not raw else text[at:end + 1])
            end += 1
        elif char == "\\" and end < len(text) and not _WORD_CHAR.match(text[end]):
            if text[end] != "\n":
                word = (word or "") + text[end]
            end += 1
        else:
            word = (word or "") + char
            raw = raw or char in "{["
        at = end
    return words if word is None else [*words, word]


def fill_arguments(body: str, arguments: str) -> str:
    """``body`` with ``arguments`` filled in as the pinned Claude Code fills a command's placeholders."""
    words = split_arguments(arguments)
    filled = False

    def value(text: str) -> str:
        nonlocal filled
        filled = True
        return text.replace("$", _KEPT)

    def word(match: re.Match[str], missing: str) -> str:
        index = int(match.group(1))
        return value(words[index]) if index < len(words) else missing

    text = _ESCAPED.sub(_KEPT, body)
    text = _AWK_PRINT.sub(lambda m: m.group(0).replace("$", _KEPT), text)
    text = _INDEXED.sub(lambda m: word(m, _KEPT + m.group(0)[1:]), text)
    text = _POSITIONAL.sub(lambda m: word(m, m.group(0)), text)
    text = re.sub(r"\$ARGUMENTS", lambda _: value(arguments), text)
    if not filled and arguments:
        text = f"{text}\n\nARGUMENTS: {value(arguments)}"
    return text.replace(_KEPT, "$")


@dataclass(frozen=True)
class Command:
    """A command (``.claude/commands/<name>.md``) or a skill run by name; ``path``: its file, absolute."""

    name: str
    description: str
    body: str
    path: str


@dataclass(frozen=True)
class Skill(Command):
    model_invocable: bool = True  # ``disable-model-invocation: true``: only a person runs it, never offered


@dataclass(frozen=True)
class SubAgent:
    id: str  # the file's name without ``.md``
    name: str  # the front matter's ``name`` (e.g. ``Archie (Architect) - Principal Architect``)
    description: str
    tools: str
    body: str

    @property
    def mention(self) -> str:
        """How the platform's UI writes it after ``@``: the name before `` - ``."""
        return (self.name.split(" - ", 1)[0].strip() or self.id) if self.name else self.id


@dataclass(frozen=True)
class WorkflowFiles:
    """The agent-facing files of one workflow folder (``folder`` absolute)."""

    folder: Path
    commands: dict[str, Command] = field(default_factory=dict)
    skills: dict[str, Skill] = field(default_factory=dict)
    agents: tuple[SubAgent, ...] = ()
    instructions: str = ""  # the workflow's CLAUDE.md (both, when it has both)

    @classmethod
    def read(cls, workspace: Workspace, folder: Path) -> WorkflowFiles:
        base = folder.relative_to(workspace.root).as_posix()
        reader = _Reader(workspace, base)
        commands = {}
        for name in reader.names(".claude/commands"):
            if name.endswith(".md") and (text := reader.text(f".claude/commands/{name}")) is not None:
                stem = name.removesuffix(".md")
                commands[stem] = Command(stem, front_matter(text).get("description", ""), body_of(text),
                                         str(folder / ".claude" / "commands" / name))
        skills = {}
        for name in reader.names(".claude/skills"):
            if (text := reader.text(f".claude/skills/{name}/SKILL.md")) is not None:
                meta = front_matter(text)
                skill_name = meta.get("name") or name
                skills[skill_name] = Skill(skill_name, meta.get("description", ""), body_of(text),
                                           str(folder / ".claude" / "skills" / name / "SKILL.md"),
                                           meta.get("disable-model-invocation", "").lower() != "true")
        instructions = "\n\n".join(text.strip() for relative in INSTRUCTION_FILES
                                   if (text := reader.text(relative)) and text.strip())
        return cls(folder, commands, skills, reader.agents(), instructions)

    @staticmethod
    def read_agents(workspace: Workspace, folder: Path) -> tuple[SubAgent, ...]:
        """The workflow's sub-agents alone (what each run's ``AgentPlace`` needs)."""
        return _Reader(workspace, folder.relative_to(workspace.root).as_posix()).agents()

    def runnable(self, name: str) -> Command | None:
        """The command ``name``, else the skill of that name (a command wins)."""
        return self.commands.get(name) or self.skills.get(name)

    def expand(self, text: str) -> str:
        """The person's message as the agent gets it: a ``/command`` (or ``/skill``) of this workflow replaced by its
        body, then the instructions of each sub-agent it mentions with ``@``. Anything else is left as it is."""
        expanded = text
        match = _SLASH.match(text.strip())
        if match and (command := self.runnable(match.group(1))) is not None:
            body = fill_arguments(command.body, match.group(2).strip())
            if isinstance(command, Skill):  # as Claude Code runs a skill: its folder first, for its relative paths
                body = f"Base directory for this skill: {Path(command.path).parent}\n\n{body}"
            expanded = f"<command-name>/{command.name}</command-name>\n{body}"
        mentioned = self.mentioned(text)
        if mentioned:
            expanded += "".join(f"\n\n<agent-instructions name=\"{agent.id}\">\nYou are {agent.mention}. "
                                f"{agent.description}\n\n{agent.body}\n</agent-instructions>" for agent in mentioned)
        return expanded

    def mentioned(self, text: str) -> list[SubAgent]:
        """The sub-agents ``text`` mentions: ``@<UI name>`` or ``@<file id>``, case-insensitive, anywhere but inside
        a word or an address (``ops@stella.io`` mentions nobody)."""
        return [agent for agent in self.agents
                if any(re.search(rf"(?<![\w.@-])@{re.escape(handle)}(?![\w-])", text, re.IGNORECASE)
                       for handle in (agent.mention, agent.id))]

    def listing(self) -> str:
        """The skills the model may use and the sub-agents it may take on, with where each skill's file is."""
        lines: list[str] = []
        offered = [s for s in self.skills.values() if s.model_invocable]
        if offered:
            lines.append("Skills of this workflow (read a skill's file and follow it when its description fits the "
                         "task; the person may also run one as /<name>):")
            lines += [f"- {s.name}: {s.description} (file: {s.path})" for s in offered]
        if self.agents:
            lines.append("Sub-agents of this workflow (a person brings one in with @<name>; take on its role and "
                         "follow its file when asked to):")
            lines += [f"- @{a.mention} ({a.id}): {a.description}" for a in self.agents]
        return "\n".join(lines)


class _Reader:
    """Files beneath ``<workspace>/<base>``, through the workspace's confinement (links out are refused)."""

    def __init__(self, workspace: Workspace, base: str) -> None:
        self.workspace = workspace
        self.base = base

    def names(self, relative: str) -> list[str]:
        try:
            return sorted(files.names_in(self.workspace, f"{self.base}/{relative}"))
        except (PathRefused, OSError):
            return []

    def agents(self) -> tuple[SubAgent, ...]:
        """``.claude/agents/*.md``: each file's front matter and body."""
        agents = []
        for name in self.names(".claude/agents"):
            if name.endswith(".md") and (text := self.text(f".claude/agents/{name}")) is not None:
                meta = front_matter(text)
                agents.append(SubAgent(name.removesuffix(".md"), meta.get("name", ""), meta.get("description", ""),
                                       meta.get("tools", ""), body_of(text)))
        return tuple(agents)

    def text(self, relative: str) -> str | None:
        try:
            return files.read_text(self.workspace, f"{self.base}/{relative}", MAX_FILE_BYTES)
        except (PathRefused, OSError, ValueError):
            return None
