"""A bridge's SDK, imported off the path to ``/ready``.

The Codex and Claude SDKs take about a second and 20-30 MiB to import (Codex's generated protocol models, Claude's
MCP stack), and nothing before a turn needs them: readiness, capabilities and the model proxy do not. So a bridge
names the modules its turns need; ``start()`` (at the end of the bridge's ``startup``) imports them in a thread
while the runner already serves, and a turn awaits ``ready()`` before it uses them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges.contract import BridgeError

log = logging.getLogger(__name__)


class LazyModules:
    def __init__(self, runner: str, *modules: str) -> None:
        self.runner = runner
        self.modules = modules
        self.loaded = False
        self._thread: threading.Thread | None = None

    def _import(self) -> None:
        for name in self.modules:
            importlib.import_module(name)
        self.loaded = True

    def _import_quietly(self) -> None:
        try:
            self._import()
        except Exception as exc:  # noqa: BLE001 - ready() imports again and says why
            log.warning("importing the %s runner's modules failed: %s", self.runner, exc)

    def start(self) -> None:
        """Import the modules in a background thread (once)."""
        if self._thread is None and not self.loaded:
            self._thread = threading.Thread(target=self._import_quietly, name=f"import-{self.runner}", daemon=True)
            self._thread.start()

    async def settled(self) -> None:
        """Return once the import has ended, the modules in or not (then the first turn's ``ready()`` says why):
        what start-up waits on to freeze their objects (``boot``)."""
        with contextlib.suppress(BridgeError):
            await self.ready()

    async def ready(self) -> None:
        """Return once the modules are imported (at once when they are); ``BridgeError`` when one cannot be."""
        if self.loaded:
            return
        try:  # joins an import under way in start()'s thread (the import lock), or does it now
            await asyncio.to_thread(self._import)
        except ImportError as exc:
            raise BridgeError(f"The {self.runner} runner cannot load its SDK ({exc}); this image may not hold "
                              f"the {self.runner} runner.", code=ErrorCode.CLI_NOT_FOUND) from exc
