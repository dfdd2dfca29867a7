"""The prompt of a run: the text of its new user message(s), i.e. those after the last non-user message, after
the run's ``context`` and ``state``."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence

from ag_ui.core import Message, RunAgentInput, UserMessage

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.interrupts.answers import Answers


class NoPromptError(RunnerError, ValueError):
    code = ErrorCode.NO_PROMPT


def trailing_user_messages(messages: Sequence[Message]) -> list[UserMessage]:
    """A run's new user messages: those after the last message of another role, in order."""
    trailing = []
    for message in reversed(messages):
        if not isinstance(message, UserMessage):
            break
        trailing.append(message)
    return list(reversed(trailing))


def new_text(run_input: RunAgentInput, trailing: Sequence[UserMessage], answers: Answers,
             seen: Callable[[], Collection[str]]) -> str:
    """The run's new user text; a run that answers interrupts may bring none (a client resuming sends its whole
    history: the user messages the thread has ``seen`` already are not new)."""
    if not answers:
        return new_user_text(trailing)
    known = seen()
    fresh = [m for m in run_input.messages if m.id not in known and m.id not in answers.answer_message_ids]
    try:
        return new_user_text(trailing_user_messages(fresh))
    except NoPromptError:
        return ""


def new_user_text(trailing: Sequence[UserMessage]) -> str:
    """Join the text of a run's trailing user messages (text parts; media parts go as attachments,
    ``attachments``). A message of media parts alone has an empty text."""
    parts: list[str] = []
    media = False
    for message in trailing:
        content = message.content
        if isinstance(content, str):
            parts.append(content)
            continue
        for part in content:
            text = getattr(part, "text", None)
            if text is not None:
                parts.append(text)
            else:
                media = True
    prompt = "\n\n".join(p for p in parts if p.strip())
    if not prompt.strip() and not media:
        raise NoPromptError("the run has no new user message with text (the last messages must be role 'user')")
    return prompt


MAX_CONTEXT_CHARS = 64 * 1024


class ContextTooLargeError(RunnerError, ValueError):
    code = ErrorCode.CONTEXT_TOO_LARGE


def with_context(run_input: RunAgentInput, prompt: str) -> str:
    """``prompt`` after the run's ``context`` entries and its ``state``, each as a clearly delimited block (what the
    client tells the agent beside the user's words); none when the run carries neither."""
    blocks: list[str] = []
    entries = [f"- {entry.description}: {entry.value}" for entry in run_input.context or []]
    if entries:
        blocks.append("<context>\n" + "\n".join(entries) + "\n</context>")
    if run_input.state not in (None, {}, []):
        blocks.append("<state>\n" + json.dumps(run_input.state, ensure_ascii=False, default=str) + "\n</state>")
    preamble = "\n\n".join(blocks)
    if len(preamble) > MAX_CONTEXT_CHARS:
        raise ContextTooLargeError(f"context and state take {len(preamble)} characters; at most {MAX_CONTEXT_CHARS}")
    return f"{preamble}\n\n{prompt}" if preamble else prompt
