"""How an adapter says a run failed: one ``Failure`` type, the one set of ``RUN_ERROR`` codes, and the one mapping
of a model API's HTTP status and of a CLI's exit to a code, so the same failure gets the same code whichever CLI
met it.

* ``code_for_status(401)`` -> ``AUTH_FAILED`` (``None`` for a status that is not an HTTP error);
* ``code_for_exit(-9)`` -> ``CLI_KILLED``; any other exit (or an unknown one) -> ``CLI_EXITED``;
* ``exit_failure("The Gemini CLI", -9)`` -> the ``Failure`` for a CLI that ended before its turn did
  ("... was killed by SIGKILL before finishing the turn ...");
* ``signal_name(9)`` -> ``"SIGKILL"``; ``how_it_ended(-9)`` -> ``"killed by SIGKILL"``, ``how_it_ended(1)`` ->
  ``"exited with code 1"``;
* ``with_stderr(message, tail)``: the message with the CLI's last stderr lines after it.

Each adapter words its own messages (which credential to check, which provider); the codes come from here.

The same codes name the runner's own errors: ``RunnerError`` is the root of every error the runner raises for its
own reasons, each with its ``ErrorCode``; a request the runner refuses before any stream starts carries one of the
request codes below (``ambient_runner.api.errors`` gives each its HTTP status).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    # the model API refused or failed (from its HTTP status)
    AUTH_FAILED = "AUTH_FAILED"  # 401 / 403: the credential was rejected
    RATE_LIMITED = "RATE_LIMITED"  # 429: rate limit or quota
    BAD_REQUEST = "BAD_REQUEST"  # another 4xx: the API refused the request as sent
    MODEL_NOT_FOUND = "MODEL_NOT_FOUND"  # 404: no such model or endpoint
    PROVIDER_OVERLOADED = "PROVIDER_OVERLOADED"  # 529: the provider says it is overloaded
    PROVIDER_ERROR = "PROVIDER_ERROR"  # 5xx: a server error, usually temporary
    PROVIDER_UNREACHABLE = "PROVIDER_UNREACHABLE"  # no answer at all
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    # the CLI stopped the turn itself
    TURN_LIMIT = "TURN_LIMIT"  # its own turn limit (Gemini)
    MAX_TURNS = "MAX_TURNS"  # the run's maximum number of turns (Claude)
    MAX_BUDGET = "MAX_BUDGET"  # the run's cost budget (Claude)
    CANCELLED = "CANCELLED"  # the CLI cancelled the turn
    # the CLI process ended before its turn did
    CLI_KILLED = "CLI_KILLED"  # by a signal
    CLI_EXITED = "CLI_EXITED"  # with an exit code (or its output ended)
    RESUME_FAILED = "RESUME_FAILED"  # its saved session could not be resumed
    CLI_CONFIG_ERROR = "CLI_CONFIG_ERROR"  # it rejected its configuration
    AGENT_ERROR = "AGENT_ERROR"  # the CLI failed some other way
    # the runner could not start or drive the CLI
    CLI_NOT_FOUND = "CLI_NOT_FOUND"  # the CLI (or its SDK) is not installed, or not executable
    CLI_START_FAILED = "CLI_START_FAILED"  # it was started but never became ready (or refused a control request)
    CLI_START_TIMEOUT = "CLI_START_TIMEOUT"  # it did not answer its protocol's first request in time
    CLI_PROTOCOL_ERROR = "CLI_PROTOCOL_ERROR"  # it wrote something that is not its protocol
    CLI_BUSY = "CLI_BUSY"  # it is still in an earlier turn that cannot be taken back
    SESSION_ERROR = "SESSION_ERROR"  # it refused the session's settings
    AUTH_MISSING = "AUTH_MISSING"  # no credential for the model API is configured
    MCP_CONFIG = "MCP_CONFIG"  # the MCP server configuration cannot be used
    WORKSPACE_MISSING = "WORKSPACE_MISSING"  # the workspace folder cannot be used
    EMPTY_PROMPT = "EMPTY_PROMPT"  # the run has no user message for the CLI
    UPSTREAM_UNREACHABLE = "UPSTREAM_UNREACHABLE"  # the runner's model proxy could not reach the model API
    # the runner ended the run
    SHUTDOWN = "SHUTDOWN"  # the runner is stopping
    RUN_TIMEOUT = "RUN_TIMEOUT"  # RUNNER_RUN_TIMEOUT
    IDLE_TIMEOUT = "IDLE_TIMEOUT"  # RUNNER_IDLE_TIMEOUT: the CLI said nothing for that long
    INTERRUPT_LOST = "INTERRUPT_LOST"  # a paused run's pending question is no longer known
    PREVIOUS_RUN_STUCK = "PREVIOUS_RUN_STUCK"  # the run before it did not settle in time (a queued turn; a POST's 503)
    RUNNER_ERROR = "RUNNER_ERROR"  # a bug in the runner (the message says which)
    RUN_ENDED = "RUN_ENDED"  # a sub-agent's end when its run ended first (SUBAGENT_ERROR, not RUN_ERROR)
    # the runner's own settings and state (they stop its start, or its state sync)
    SETTINGS_INVALID = "SETTINGS_INVALID"  # a setting the runner cannot use (the message names it)
    STATE_STORE = "STATE_STORE"  # the state store cannot be read or written, or another runner took it over
    # a request the runner refused before any stream started (the API's error envelope; its status: api/errors.py)
    INVALID_JSON = "INVALID_JSON"  # the body is not JSON the runner reads
    INVALID_REQUEST = "INVALID_REQUEST"  # a value the call does not take
    INVALID_RUN_INPUT = "INVALID_RUN_INPUT"  # a POST /run body that is no AG-UI RunAgentInput
    INVALID_FEEDBACK = "INVALID_FEEDBACK"  # a POST /feedback body that is no rating
    UNSUPPORTED_PROTOCOL = "UNSUPPORTED_PROTOCOL"  # an AG-UI version other than 1.x
    BODY_TOO_LARGE = "BODY_TOO_LARGE"
    UNAUTHORIZED = "UNAUTHORIZED"  # no token, or the wrong one (AGUI_TOKEN)
    NOT_FOUND = "NOT_FOUND"  # no such route, file or repository
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    HTTP_ERROR = "HTTP_ERROR"  # another of the web framework's own refusals
    INTERNAL = "INTERNAL"  # a bug in the runner while serving the request
    STARTING = "STARTING"  # the runner is still starting
    NOT_READY = "NOT_READY"  # the runner failed to start
    DRAINING = "DRAINING"  # the runner is shutting down
    THREAD_BUSY = "THREAD_BUSY"  # the thread's run streams (or the POST is a retry of one that does)
    QUEUE_FULL = "QUEUE_FULL"  # RUNNER_MAX_QUEUED messages already wait
    RUN_ACTIVE = "RUN_ACTIVE"  # a run streams, waits or is paused: what would cut through it is refused
    NO_ACTIVE_RUN = "NO_ACTIVE_RUN"  # nothing to interrupt
    UNKNOWN_THREAD = "UNKNOWN_THREAD"
    NO_PROMPT = "NO_PROMPT"  # no new user message with text
    CONTEXT_TOO_LARGE = "CONTEXT_TOO_LARGE"  # the run's context and state are too long
    INVALID_OPTION = "INVALID_OPTION"  # a run option (forwardedProps) the runner cannot honour
    INVALID_ATTACHMENT = "INVALID_ATTACHMENT"  # an image or document part the runner does not take
    MODEL_REQUIRED = "MODEL_REQUIRED"  # POST /model without a model
    INVALID_RESUME = "INVALID_RESUME"  # a resume entry the runner cannot read
    UNKNOWN_INTERRUPT = "UNKNOWN_INTERRUPT"  # an answer to an interrupt that is not open
    NO_OPEN_QUESTION = "NO_OPEN_QUESTION"  # a question card's answer while no question waits
    INVALID_ANSWER = "INVALID_ANSWER"  # a question card's answer the card does not ask for
    INTERRUPTS_UNANSWERED = "INTERRUPTS_UNANSWERED"  # some of the thread's open interrupts answered, not all
    INVALID_PATH = "INVALID_PATH"  # a workspace path the calls do not touch
    PATH_REFUSED = "PATH_REFUSED"  # a link that leads out of the workspace
    FILE_TOO_LARGE = "FILE_TOO_LARGE"  # over RUNNER_MAX_FILE_BYTES
    FILE_SYSTEM = "FILE_SYSTEM"  # the file system refused (the message is its own)
    REPO_EXISTS = "REPO_EXISTS"
    GIT_FAILED = "GIT_FAILED"  # git's own message (never a token)
    UNKNOWN_TASK = "UNKNOWN_TASK"
    NO_OUTPUT = "NO_OUTPUT"  # a background task's output that cannot be read
    OUTPUT_TOO_LARGE = "OUTPUT_TOO_LARGE"
    TASK_FINISHED = "TASK_FINISHED"
    TASK_NOT_STOPPABLE = "TASK_NOT_STOPPABLE"


class RunnerError(Exception):
    """The root of every error the runner raises for its own reasons: its ``code``, the ``message`` a person reads
    (the API's error envelope, or the run's ``RUN_ERROR``) and the ``details`` the code's meaning needs. A subclass
    names its usual code; one raise may name another."""

    code: ErrorCode = ErrorCode.RUNNER_ERROR

    def __init__(self, message: str, *, code: ErrorCode | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details


def error_code(value: str | None, default: ErrorCode = ErrorCode.AGENT_ERROR) -> ErrorCode:
    """A code read back from an event (``RunErrorEvent.code`` is a plain string) as the enum; ``default`` for
    none or for a string that is no member (never raised: a run's error must still be reported)."""
    try:
        return ErrorCode(value) if value is not None else default
    except ValueError:
        return default


@dataclass(frozen=True)
class Failure:
    """Why a run failed: the ``RUN_ERROR`` message (for a user, saying what to do) and code."""

    message: str
    code: ErrorCode
    http_status: int | None = None  # the model API's status, when the failure came from one

    def with_stderr(self, stderr_tail: str) -> Failure:
        return Failure(with_stderr(self.message, stderr_tail), self.code, self.http_status)


def code_for_status(status: int | None) -> ErrorCode | None:
    """The code for a model API's HTTP error status (``None``: not an HTTP error)."""
    if status is None or status < 400:
        return None
    if status in (401, 403):
        return ErrorCode.AUTH_FAILED
    if status == 429:
        return ErrorCode.RATE_LIMITED
    if status == 404:
        return ErrorCode.MODEL_NOT_FOUND
    if status == 529:
        return ErrorCode.PROVIDER_OVERLOADED
    if status >= 500:
        return ErrorCode.PROVIDER_ERROR
    return ErrorCode.BAD_REQUEST


def code_for_exit(exit_code: int | None) -> ErrorCode:
    """The code for a CLI that ended before its turn did: killed by a signal (a negative exit code), or not."""
    return ErrorCode.CLI_KILLED if exit_code is not None and exit_code < 0 else ErrorCode.CLI_EXITED


def signal_name(signum: int) -> str:
    """``9`` -> ``"SIGKILL"``; a number Python does not know -> ``"signal 99"``."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def how_it_ended(exit_code: int) -> str:
    """A process's end in words: ``"killed by SIGKILL"`` (negative exit code) or ``"exited with code 1"``."""
    return f"killed by {signal_name(-exit_code)}" if exit_code < 0 else f"exited with code {exit_code}"


def exit_failure(agent: str, exit_code: int | None) -> Failure:
    """The failure of a CLI that ended before its turn did. ``agent`` names it as a sentence starts
    (``"The Gemini CLI"``); ``exit_code`` ``None``: only its output was seen to end."""
    code = code_for_exit(exit_code)
    if exit_code is None:
        return Failure(f"{agent} output ended before the turn finished.", code)
    if exit_code < 0:
        return Failure(f"{agent} was {how_it_ended(exit_code)} before finishing the turn (out of memory, or stopped "
                       "from outside).", code)
    return Failure(f"{agent} exited with code {exit_code} before finishing the turn.", code)


def with_stderr(message: str, stderr_tail: str) -> str:
    """``message`` followed by the CLI's last stderr lines (unchanged when there are none)."""
    tail = stderr_tail.strip()
    return f"{message}\nLast lines of the CLI's stderr:\n{tail}" if tail else message
