"""Event -> wire JSON (camelCase, once per event), with every configured secret removed, and the SSE frame."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable

from ag_ui.core import BaseEvent

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 6
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)


class Redactor:
    """Replaces each secret value (and its JSON-escaped form) with ``[REDACTED]``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= MIN_SECRET_LENGTH:
                forms.add(secret)
                forms.add(json.dumps(secret)[1:-1])
        ordered = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)

    def __bool__(self) -> bool:
        return self._pattern is not None


def environment_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they hold a credential."""
    environ = dict(os.environ) if environ is None else environ
    return [v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH]


def event_json(event: BaseEvent, redact: Redactor) -> str:
    return redact(event.model_dump_json(by_alias=True, exclude_none=True))


def sse_frame(seq: int, data: str) -> str:
    return f"id: {seq}\ndata: {data}\n\n"
