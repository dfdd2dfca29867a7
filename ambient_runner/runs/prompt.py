"""The prompt of a run: the text of its new user message(s), i.e. those after the last non-user message, after
the run's ``context`` and ``state``."""

from __future__ import annotations

import json

from ag_ui.core import RunAgentInput


class NoPromptError(ValueError):
    pass


def new_user_text(run_input: RunAgentInput) -> str:
    """Join the text of the trailing user messages (text parts only; other parts are described)."""
    trailing = []
    for message in reversed(run_input.messages):
        if message.role != "user":
            break
        trailing.append(message)
    parts: list[str] = []
    for message in reversed(trailing):
        content = message.content
        if isinstance(content, str):
            parts.append(content)
            continue
        for part in content:
            text = getattr(part, "text", None)
            if text is not None:
                parts.append(text)
            else:
                parts.append(f"[{getattr(part, 'type', 'attachment')} attachment omitted]")
    prompt = "\n\n".join(p for p in parts if p.strip())
    if not prompt.strip():
        raise NoPromptError("the run has no new user message with text (the last messages must be role 'user')")
    return prompt


MAX_CONTEXT_CHARS = 64 * 1024


class ContextTooLargeError(ValueError):
    pass


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
