"""One ``session/prompt`` on the live agent as a stream of what the CLI sends for it, in order:

``("update", SessionUpdate)``, ``("permission", request id, RequestPermissionParams)``, ``("refused", tool call id,
text)`` (put by the bridge when a person refused a call), and at the end ``("end", PromptResult)`` or ``("error",
AcpError | AcpClosed)`` (the models of ``ag_ui_gemini_cli.acp_schema``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ag_ui_gemini_cli.acp_schema import ContentBlock, PromptParams, PromptResult
from ambient_runner.bridges.acp_client.connection import AcpClosed, AcpConnection, AcpError, SentRequest
from ambient_runner.bridges.acp_client.live import LiveAgent

Item = tuple[Any, ...]


class PromptFeed:
    def __init__(self, live: LiveAgent, session_id: str, stderr_mark: int | None = None) -> None:
        self.live = live
        self.session_id = session_id
        self.stderr_mark = stderr_mark  # the live CLI's stderr line count when the prompt was sent
        self._queue: asyncio.Queue[Item] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.answers: set[asyncio.Task[None]] = set()  # replies to permission requests, waiting for a person
        self.texts: list[ContentBlock] = []  # the prompt's own text blocks
        self.refused = False  # a person refused a call of it (the turn goes on: not a stop)
        self.groups_before: set[int] = set()  # the agent's descendants' process groups when it was sent
        live.route(session_id, self.put)

    def put(self, item: Item) -> None:
        self._queue.put_nowait(item)

    def start(self, connection: AcpConnection, prompt: list[ContentBlock]) -> None:
        """The prompt is written now; a task waits for its end."""
        sent = connection.send_request("session/prompt", PromptParams(session_id=self.session_id, prompt=prompt))
        self._task = asyncio.create_task(self._prompt(connection, sent), name=f"acp-prompt-{self.session_id}")

    async def _prompt(self, connection: AcpConnection, sent: SentRequest) -> None:
        try:
            result = await connection.reply(sent, PromptResult)
        except (AcpError, AcpClosed) as exc:
            self.put(("error", exc))
        else:
            self.put(("end", result))

    @property
    def running(self) -> bool:
        """The prompt has not ended yet."""
        return self._task is not None and not self._task.done()

    async def ended(self, within: float) -> bool:
        if self._task is None:
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._task), timeout=within)
        return self._task.done()

    def __aiter__(self) -> PromptFeed:
        return self

    async def __anext__(self) -> Item:
        return await self._queue.get()

    async def aclose(self) -> None:
        """The feed is done with: no more routing; a prompt still running is the caller's to cancel first."""
        self.live.unroute(self.session_id, self.put)
        for task in [self._task, *self.answers]:
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
