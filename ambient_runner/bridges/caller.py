"""Who sent a run: the identity the platform's backend forwards on ``POST /`` (agui_proxy.go).

``X-Caller-Token`` is the person's own ``Authorization`` value (``Bearer ...``) and ``X-Current-User-ID`` their user
id. The runner uses them only to fetch that person's connected accounts (``platform.credentials``); they are never
logged, and the token joins the redaction list as soon as a run carries it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

MAX_LENGTH = 255
MAX_TOKEN_LENGTH = 16 * 1024
USER_ID_CHARACTERS = re.compile(r"[^a-zA-Z0-9@._-]")
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Caller:
    token: str = ""  # the ``Authorization`` value to send as it is (``Bearer <jwt>``)
    user_id: str = ""

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Caller:
        """From the run request's headers (any case); unusable values are dropped, never passed on as they are."""
        token = CONTROL_CHARACTERS.sub("", headers.get("x-caller-token", "").strip())[:MAX_TOKEN_LENGTH]
        if not (token.isascii() and token.isprintable()):  # no real token; httpx could not send it either
            token = ""
        user_id = USER_ID_CHARACTERS.sub("", headers.get("x-current-user-id", "").strip()[:MAX_LENGTH])
        return cls(token, user_id)

    def __repr__(self) -> str:  # never the token, wherever a caller is printed
        return f"Caller(user_id={self.user_id!r}, token={'set' if self.token else 'none'})"

    def secrets(self) -> list[str]:
        """The bearer value (what a tool or a log could show, with or without its scheme)."""
        if not self.token:
            return []
        return [self.token.split(None, 1)[1] if " " in self.token else self.token]
