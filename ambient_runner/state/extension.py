"""Which state extensions ``create_app`` gets: state sync (``ambient_runner.state.lifecycle``) when
``STATE_STORE_URL`` is set, else none. The sync's own modules (archives, stores) are imported only then: most pods
have their state dir saved by the platform's sidecar, and an idle runner does not carry what it never runs."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from ambient_runner.platform.state_dir import synced_by_platform
from ambient_runner.settings import RunnerSettings
from ambient_runner.state.host import StateHost

log = logging.getLogger(__name__)

Cleanup = Callable[[], Awaitable[None]]


def state_extensions(settings: RunnerSettings) -> list[Callable[[StateHost], Awaitable[Cleanup | None]]]:
    """The extensions for ``create_app``: state sync when ``STATE_STORE_URL`` is set, else none (logged once)."""
    if not settings.state_store_url:
        if synced_by_platform(settings):
            log.info("state sync: the platform's state-sync sidecar saves the state dir %s", settings.state_dir)
        else:
            log.info("state sync: off (STATE_STORE_URL is not set); the state dir %s is not saved anywhere",
                     settings.state_dir)
        return []
    from ambient_runner.state.lifecycle import StateSyncExtension

    return [StateSyncExtension(settings)]
