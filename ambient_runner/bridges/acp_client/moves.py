"""A thread whose workflow changed goes on in the new folder (``AcpTurns``): how the agent's session of it gets
there, which each agent does its own way (``FolderMove``, its preset's):

* ``ReopenThere`` (the default): the session, if the process holds it, is closed (when the agent can), and the
  thread's next turn loads it in the new folder. codex-acp kept a session it holds where it was opened (a load in
  another folder changed nothing: the next command ran in the old one); claude-agent-acp opens it again there.
* ``ChangeDirectory``: the agent moves a session it holds itself, by an extension of its own (Qwen Code's
  ``qwen/control/session/cd``: it refuses to load a session it holds in another folder, and has no
  ``session/close``); its files stay in the folder it began in, where it is loaded after a restart, then moved.
* ``NewSessionThere``: the agent runs a session only in the folder it was created in (opencode: loaded elsewhere,
  its commands' approvals never come back), so the thread goes on in a new session in the new folder, told of the
  conversation so far: the text of its turns, as the old session's load replays them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_gemini_cli.acp_schema import AcpModel, ContentBlock, MessageChunk
from ambient_runner.bridges.acp_client.connection import AcpError
from ambient_runner.bridges.acp_client.live import SESSION_TIMEOUT, AcpSession, LiveAgent
from ambient_runner.bridges.contract import BridgeError
from ambient_runner.bridges.session_map import SessionMap

log = logging.getLogger(__name__)
MAX_TRANSCRIPT = 64 * 1024  # characters of the conversation so far a new session is told (its latest)
SPEAKERS = {"user_message_chunk": "user", "agent_message_chunk": "assistant"}


@dataclass
class Moved:
    """The thread's session in the new folder, what its next prompt must carry first (its earlier turns), and
    whether it is to be opened there from now on (else, after a restart, where it began, then moved again)."""

    session: AcpSession
    history: list[ContentBlock] = field(default_factory=list)
    settled: bool = True


class FolderMove(Protocol):
    async def move(self, live: LiveAgent, session_id: str, old: Path, new: Path) -> Moved | None:
        """The session in ``new`` (None: the thread's next turn loads it there as usual)."""
        ...


class ReopenThere:
    async def move(self, live: LiveAgent, session_id: str, old: Path, new: Path) -> Moved | None:
        if session_id in live.sessions and live.closes:
            await live.close_session(session_id)
        return None


class DirectoryParams(AcpModel):
    session_id: str
    path: str


@dataclass(frozen=True)
class ChangeDirectory:
    method: str  # the agent's own request that moves a session it holds: {sessionId, path}

    async def move(self, live: LiveAgent, session_id: str, old: Path, new: Path) -> Moved | None:
        try:
            if session_id not in live.sessions:  # after a restart: opened where its files are, then moved
                await live.load_session(session_id, old)
            await (await live.connection()).request(self.method, DirectoryParams(session_id=session_id,
                                                                                 path=str(new)),
                                                    AcpModel, within=SESSION_TIMEOUT)
        except (AcpError, TimeoutError) as exc:
            raise BridgeError(f"{live.agent.name} could not move the thread's session to the workflow's folder "
                              f"{new}: {exc}", code=ErrorCode.SESSION_ERROR) from exc
        return Moved(live.sessions[session_id], settled=False)  # its files stay in the folder it began in


class NewSessionThere:
    async def move(self, live: LiveAgent, session_id: str, old: Path, new: Path) -> Moved | None:
        turns: list[tuple[str, str]] = []  # (speaker, text), consecutive chunks of one speaker joined

        def replayed(item: tuple[Any, ...]) -> None:
            update = item[1] if item[0] == "update" else None
            if isinstance(update, MessageChunk) and update.session_update in SPEAKERS and update.text:
                speaker = SPEAKERS[update.session_update]
                if turns and turns[-1][0] == speaker:
                    turns[-1] = (speaker, turns[-1][1] + update.text)
                else:
                    turns.append((speaker, update.text))

        try:
            await live.load_session(session_id, old, replay=replayed)
        except (AcpError, TimeoutError) as exc:  # its conversation cannot be read: the new session starts without
            log.warning("%s: session %s could not be read for the new folder (%s)", live.agent.label, session_id,
                        exc)
        if live.closes:
            await live.close_session(session_id)
        session = await live.new_session(new)
        log.info("%s: session %s goes on as %s in %s (%d earlier messages)", live.agent.label, session_id,
                 session.id, new, len(turns))
        return Moved(session, [ContentBlock(type="text", text=transcript(turns, old, new))] if turns else [])


class SessionFolders:
    """Session id -> the folder it works in, a ``SessionMap`` of its own beside the thread map (read on first use:
    after the state dir was restored), so that a thread moved by a switch before a restart is still moved after it.
    A file that cannot be read or written loses only that move."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._map: SessionMap | None = None

    def get(self, session_id: str) -> Path | None:
        folder = self._folders().get(session_id)
        return Path(folder) if folder else None

    def set(self, session_id: str, folder: Path) -> None:
        try:
            self._folders().set(session_id, str(folder))
        except OSError as exc:  # the move after a restart is lost, nothing else
            log.warning("the sessions' folders could not be written to %s: %s", self.path, exc)

    def _folders(self) -> SessionMap:
        if self._map is None:
            self._map = SessionMap(self.path.parent, self.path.name, section="sessions", lenient=True)
        return self._map


def transcript(turns: list[tuple[str, str]], old: Path, new: Path) -> str:
    """The conversation so far, for a session that goes on in another folder (its latest ``MAX_TRANSCRIPT``)."""
    text = "\n\n".join(f"{speaker}: {words.strip()}" for speaker, words in turns)[-MAX_TRANSCRIPT:]
    return (f'<conversation-so-far folder="{old}">\nThis conversation began in {old}; the person switched the '
            f"workflow, so it goes on in {new}. Its earlier messages:\n\n{text}\n</conversation-so-far>\n\n")
