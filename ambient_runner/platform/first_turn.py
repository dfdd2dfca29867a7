"""The session's first turn on the platform: the runner asks the platform's backend to run ``INITIAL_PROMPT``.

On the platform nothing else sends the prompt a session was created with, and the run must go through the
backend (which stores its events and shows them), so the runner POSTs it there as a hidden user message:
``$BACKEND_API_URL/projects/$PROJECT_NAME/agentic-sessions/$SESSION_ID/agui/run`` with the bot token read fresh
from its file on every attempt (kubelet rotates it), retried with a doubling backoff on 5xx, 401 or a backend that
cannot be reached, at most ``ATTEMPTS`` times. Any other answer is final, and so is a request the backend may have
received without answering (sent again, it could run twice). Neither the token nor the prompt is logged.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path

import httpx

from ambient_runner.settings import RunnerSettings

log = logging.getLogger(__name__)
ATTEMPTS = 8
MAX_BACKOFF = 30.0
REQUEST_TIMEOUT = 30.0


def hidden_metadata(source: str) -> dict[str, object]:
    """A turn the runner sent by itself: the platform's UI hides it."""
    return {"hidden": True, "autoSent": True, "source": source}


def first_turn_url(settings: RunnerSettings) -> str | None:
    """The backend's run endpoint for this session, or ``None`` when the runner is not on the platform."""
    base = settings.backend_api_url.strip().rstrip("/")
    if not base:
        return None
    if not settings.project:
        log.warning("BACKEND_API_URL is set but PROJECT_NAME is not: the first turn runs here, not through the "
                    "platform's backend")
        return None
    return f"{base}/projects/{settings.project}/agentic-sessions/{settings.session_id}/agui/run"


def read_bot_token(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _retryable(response: httpx.Response) -> bool:
    return response.status_code >= 500 or response.status_code == 401 or "not available" in response.text.lower()


async def post_first_turn(settings: RunnerSettings, url: str, prompt: str,
                          source: str = "runner_initial_prompt") -> bool:
    """POST the prompt as a hidden run of the session; ``True`` once the backend took it."""
    message_id = f"initial-{uuid.uuid4()}"
    backoff = settings.runner_first_turn_backoff
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, trust_env=False) as client:
        for attempt in range(1, ATTEMPTS + 1):
            body = {"threadId": settings.session_id, "runId": str(uuid.uuid4()),
                    "messages": [{"id": message_id, "role": "user", "content": prompt,
                                  "metadata": hidden_metadata(source)}]}
            headers = {"Content-Type": "application/json"}
            token = read_bot_token(settings.runner_bot_token_file)
            if token:
                headers["Authorization"] = f"Bearer {token}"
            try:
                response = await client.post(url, json=body, headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # never delivered: safe to send again
                reason = f"the backend is unreachable ({type(exc).__name__})"
            except httpx.HTTPError as exc:  # it may have been delivered: sending it again could run it twice
                log.error("first turn: the backend did not answer (%s); not retried", type(exc).__name__)
                return False
            else:
                if response.is_success:
                    log.info("the platform's backend took the first turn (run %s)", body["runId"])
                    return True
                reason = f"the backend answered HTTP {response.status_code}"
                if not _retryable(response):
                    log.error("first turn not started: %s; not retried", reason)
                    return False
            if attempt == ATTEMPTS:
                break
            log.warning("first turn, attempt %d of %d: %s; retrying in %.0f s", attempt, ATTEMPTS, reason, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)
    log.error("first turn not started after %d attempts: %s", ATTEMPTS, reason)
    return False
