"""Turn an error ``ResultMessage`` into a ``Failure``: the RUN_ERROR message a user can act on, and its code."""

from __future__ import annotations

import re

from claude_agent_sdk import ResultMessage

from ag_ui_cli_common import ErrorCode, Failure, code_for_status

# Subtypes/terminal reasons the CLI reports for a turn stopped by an interrupt: not an error.
INTERRUPTED_REASONS = {"aborted_streaming", "aborted_tools", "interrupted", "user_interrupt"}


def is_interrupted(result: ResultMessage, saw_interrupt_marker: bool) -> bool:
    """True for the result of a turn that ``interrupt()`` (or SIGINT) ended."""
    if not result.is_error or result.subtype != "error_during_execution":
        return False
    return saw_interrupt_marker or (result.terminal_reason or "") in INTERRUPTED_REASONS


# Claude Code (2.1.337 on: docs/runners.md#versions) ends a turn whose tool calls plan mode refused with
# ``is_error: true``, subtype ``success``, one ``errors`` entry tagged so per refusal ("... so they did not run: Bash.
# ... [auto_mode_unchecked]") and the refused calls in ``permission_denials`` (each with ``auto_mode_unchecked``).
REFUSAL_TAG = "[auto_mode_unchecked]"
_REFUSED_TOOLS = re.compile(r"did not run: (?P<names>[^.]+)\.")


def is_refusal_only(result: ResultMessage) -> bool:
    """True for an ``is_error`` result whose only errors are plan-mode refusals of calls its ``permission_denials``
    lists: the turn itself finished (what the CLI said about the refusal is its text), nothing failed."""
    errors = [str(e) for e in (result.errors or []) if e]
    denials = [d for d in (result.permission_denials or []) if isinstance(d, dict)]
    if result.subtype != "success" or result.api_error_status is not None or not errors or not denials:
        return False
    refused = {str(d.get("tool_name")) for d in denials}
    return all(_refuses_only(error, refused) for error in errors)


def _refuses_only(error: str, refused: set[str]) -> bool:
    if not error.rstrip().endswith(REFUSAL_TAG):
        return False
    named = _REFUSED_TOOLS.search(error)  # the tools it names, when it names them in the words 2.1.337 uses
    return named is None or {n.strip() for n in named["names"].split(",")} <= refused


def describe_failure(result: ResultMessage, cli_text: str = "") -> Failure:
    """The user-facing message for an ``is_error`` result (API errors, max turns, budget, crashes)."""
    detail = (result.result or cli_text or "").strip()
    errors = "; ".join(str(e) for e in (result.errors or []) if e)
    said = f" Claude Code said: {detail}" if detail else ""
    status = result.api_error_status
    code = code_for_status(status if isinstance(status, int) else None)
    if code is ErrorCode.AUTH_FAILED:
        return Failure(
            f"Anthropic rejected the API key (HTTP {status}). Check ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN,"
            f" ANTHROPIC_AUTH_TOKEN, or the Vertex credentials) configured for this session.{said}", code, status)
    if code is ErrorCode.RATE_LIMITED:
        return Failure(
            "The Anthropic API rate limit was reached (HTTP 429). Wait a minute and try again, or use a key with"
            f" a higher limit.{said}", code, status)
    if code is ErrorCode.PROVIDER_OVERLOADED:
        return Failure(f"The Anthropic API is overloaded (HTTP 529). Try again in a moment.{said}", code, status)
    if code is ErrorCode.PROVIDER_ERROR:
        return Failure(
            f"The Anthropic API had a server error (HTTP {status}). This is usually temporary: try again in a"
            f" moment.{said}", code, status)
    if code is not None:
        return Failure(f"The Anthropic API rejected the request (HTTP {status}).{said}", code, status)
    if result.subtype == "error_max_turns":
        return Failure(f"Claude stopped after reaching the maximum number of turns ({result.num_turns}).",
                          ErrorCode.MAX_TURNS)
    if result.subtype == "error_max_budget_usd":
        return Failure("Claude stopped because the run reached its cost budget.", ErrorCode.MAX_BUDGET)
    reason = detail or errors or result.terminal_reason or result.subtype
    return Failure(f"Claude Code failed during the turn: {reason}", ErrorCode.AGENT_ERROR)
