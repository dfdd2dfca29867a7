"""The SDK's subprocess transport, keeping hold of the CLI's process once it is spawned.

The SDK forgets the process when a start fails (its ``close()`` drops it), so how the CLI died (a signal, an exit
code) would be lost exactly when it matters. The transport is handed to the client ready-made; the one option the
client would otherwise set on its own copy (permission prompts over the control protocol when ``can_use_tool`` is
given) is set here the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions

from ag_ui_claude.sdk_private import SubprocessCLITransport, transport_process


async def _no_prompt() -> AsyncIterator[dict[str, Any]]:
    return
    yield {}  # an async generator that ends at once: the client writes each prompt itself


class WatchedTransport(SubprocessCLITransport):
    def __init__(self, options: ClaudeAgentOptions) -> None:
        if options.can_use_tool and not options.permission_prompt_tool_name:
            options = replace(options, permission_prompt_tool_name="stdio")
        super().__init__(prompt=_no_prompt(), options=options)
        self.process: Any = None  # the spawned CLI, kept after the SDK lets go of it
        self.spawned = asyncio.Event()

    async def connect(self) -> None:
        try:
            await super().connect()
        finally:
            self.process = self.process or transport_process(self)
            if self.process is not None:
                self.spawned.set()

    async def ended(self) -> int:
        """Waits for the CLI to be spawned and to end; its exit code."""
        await self.spawned.wait()
        return await self.process.wait()

    @property
    def pid(self) -> int | None:
        return getattr(self.process, "pid", None)

    async def exit_code(self, wait: float = 2.0) -> int | None:
        """The CLI's exit code, if it has ended or ends within ``wait`` seconds."""
        if self.process is None:
            return None
        with contextlib.suppress(Exception):
            async with asyncio.timeout(wait):
                return await self.process.wait()
        return getattr(self.process, "returncode", None)
