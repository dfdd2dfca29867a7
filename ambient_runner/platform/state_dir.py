"""The state dir on the platform: its operator mounts ``/workspace/<stateDir>`` at ``/app/<stateDir>`` (the image's
``RUNNER_STATE_ROOT``), and its state-sync sidecar uploads everything in it to S3 every 60 s, whatever our own
sync would leave out. So in that mode no credential file may be there: one left by an earlier pod is removed, and
a login that would write one (a mounted ChatGPT ``auth.json``, a Google ``oauth_creds.json``) is refused with a
reason ``/ready`` shows, before the CLI is prepared. API keys and Vertex never touch the state dir.
"""

from __future__ import annotations

import logging

from ambient_runner.bridges.contract import Bridge
from ambient_runner.settings import RunnerSettings

log = logging.getLogger(__name__)


def synced_by_platform(settings: RunnerSettings) -> bool:
    """On the platform (its backend is set) without our own store: the platform's sidecar saves the state dir."""
    return bool(settings.backend_api_url.strip()) and not settings.state_store_url


def keep_credentials_out(settings: RunnerSettings, bridge: Bridge) -> str | None:
    """Remove credential files from the state dir; a problem when the bridge's login would write one there."""
    if not synced_by_platform(settings):
        return None
    files = bridge.state_files()
    for name in files.credentials:
        path = settings.state_dir / name
        if path.is_file() or path.is_symlink():
            path.unlink()
            log.warning("removed %s from the state dir: the platform's state sync would upload it", name)
    login = files.logins
    if login:
        return (f"the configured login writes {', '.join(login)} into the state dir {settings.state_dir}, which the "
                "platform's state sync uploads as is; use an API key (or Vertex AI) on the platform")
    return None
