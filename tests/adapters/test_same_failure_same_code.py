"""The same provider failure gets the same RUN_ERROR code whichever CLI met it: each adapter's recorded 401 stream
(Claude stream-json, Codex app-server notifications, Gemini stream-json), with the status rewritten to 400, 401,
403, 404, 429, 500, 503 and 529 where the CLI writes it, through the whole adapter; every code is the one
``ag_ui_cli_common.code_for_status`` gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai_codex.generated.notification_registry import NOTIFICATION_MODELS
from openai_codex.models import Notification, UnknownNotification

from ag_ui_claude import translate as claude_translate
from ag_ui_cli_common import ErrorCode, Exit, code_for_status
from ag_ui_codex_sdk import CodexEventAdapter
from ag_ui_gemini_cli import GeminiCliAdapter

FIXTURES = Path(__file__).parent.parent / "fixtures"
STATUSES = [400, 401, 403, 404, 429, 500, 503, 529]


def recorded(runner: str, name: str) -> str:
    return (FIXTURES / runner / name).read_text()


def claude_code(status: int) -> str | None:
    text = recorded("claude", "error401.jsonl").replace('"api_error_status": 401', f'"api_error_status": {status}')
    events = claude_translate([json.loads(line) for line in text.splitlines() if line.strip()])
    return next(e.code for e in events if e.type == "RUN_ERROR")


def codex_code(status: int) -> str | None:
    text = recorded("codex", "error401.jsonl").replace('"httpStatusCode": 401', f'"httpStatusCode": {status}')
    text = text.replace("unexpected status 401 Unauthorized", f"unexpected status {status}")
    notifications = []
    for line in text.splitlines():
        if line.strip():
            data = json.loads(line)
            model = NOTIFICATION_MODELS.get(data["method"])
            payload = model.model_validate(data["params"]) if model else UnknownNotification(params=data["params"])
            notifications.append(Notification(method=data["method"], payload=payload))
    events = CodexEventAdapter("thread-1", "run-1", model="gpt-5.5").run(notifications)
    return next(e.code for e in events if e.type == "RUN_ERROR")


def gemini_code(status: int) -> str | None:
    meta = json.loads(recorded("gemini", "error401.meta.json"))
    text = recorded("gemini", "error401.stdout.jsonl").replace('\\"code\\":401', f'\\"code\\":{status}')
    adapter = GeminiCliAdapter("thread-1", "run-1")
    events: list[Any] = []
    for line in text.splitlines():
        events += adapter.feed(line)
    events += adapter.finish(Exit(meta["exit_code"]))
    return next(e.code for e in events if e.type == "RUN_ERROR")


@pytest.mark.parametrize("status", STATUSES)
def test_one_status_one_code_for_every_adapter(status: int) -> None:
    expected = code_for_status(status)
    assert expected is not None
    assert {"claude": claude_code(status), "codex-sdk": codex_code(status), "gemini-cli": gemini_code(status)} == {
        "claude": expected, "codex-sdk": expected, "gemini-cli": expected}


def test_the_mapping() -> None:
    assert [code_for_status(s) for s in STATUSES] == [
        ErrorCode.BAD_REQUEST, ErrorCode.AUTH_FAILED, ErrorCode.AUTH_FAILED, ErrorCode.MODEL_NOT_FOUND,
        ErrorCode.RATE_LIMITED, ErrorCode.PROVIDER_ERROR, ErrorCode.PROVIDER_ERROR, ErrorCode.PROVIDER_OVERLOADED]
    assert code_for_status(None) is None and code_for_status(302) is None
