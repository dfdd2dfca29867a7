"""The prompt of a run: the text of its new user message(s), i.e. those after the last non-user message."""

from __future__ import annotations

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
