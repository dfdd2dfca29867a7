"""A ``POST /run`` read once, against its thread's state at admission, into its ``RunRequest``; or the ``RunnerError``
(a 4xx) that refuses it.

In this order, as a person would check it: the answers it brings to the thread's open interrupts (all of them, or
none), its new user text (a workflow's command expanded, after the run's context), then, once the runner is ready,
its options, its attachments and what it does when the thread is busy. The run's trailing user messages (its new
ones) are found once, for the answers, the prompt and the attachments alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

from ag_ui.core import RunAgentInput, UserMessage

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges.caller import Caller
from ambient_runner.bridges.contract import Bridge
from ambient_runner.interrupts.answers import Answers, ResumeError, read_answers
from ambient_runner.interrupts.human_in_the_loop import Waiting
from ambient_runner.runs.attachments import AttachmentRules, collect, discard_written
from ambient_runner.runs.busy import when_busy
from ambient_runner.runs.prompt import NoPromptError, new_user_text, trailing_user_messages, with_context
from ambient_runner.runs.request import RunRequest

IMAGES_ALONE = "See the attached files."  # a message of images alone: the CLIs want some text beside them


@dataclass(frozen=True)
class ThreadAtAdmission:
    """What a run is read against: its thread's open interrupts, those a previous runner process had open, and the
    messages the thread has seen (a client resuming a pause sends its whole history again)."""

    waiting: Waiting
    seen: Callable[[], Collection[str]]


@dataclass(frozen=True)
class Reader:
    """How a ``POST /run`` is read: ``expand`` (a workflow's /command, /skill or @agent as the agent gets it; what
    the person typed stays in the thread), ``ready`` (the bridge, once the runner has started), the attachment rules
    for that bridge, and who sent it."""

    expand: Callable[[str], str]
    ready: Callable[[], Awaitable[Bridge]]
    attachment_rules: Callable[[Bridge], AttachmentRules]
    caller: Caller


async def read_request(run_input: RunAgentInput, thread: ThreadAtAdmission, reader: Reader) -> RunRequest:
    trailing = trailing_user_messages(run_input.messages)
    answers = _answers(run_input, thread, trailing)
    prompt = with_context(run_input, reader.expand(_new_text(run_input, trailing, answers, thread)))
    bridge = await reader.ready()
    props = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else None
    options = bridge.parse_options(props)
    attachments = await collect(run_input, trailing, reader.attachment_rules(bridge))
    try:
        mode = when_busy(props, bridge.steering)
    except BaseException:
        discard_written(attachments)  # not admitted: nobody else removes them
        raise
    if not prompt.strip() and attachments:
        prompt = IMAGES_ALONE
    return RunRequest(run_input, prompt, options, tuple(attachments), answers, reader.caller, mode)


def _answers(run_input: RunAgentInput, thread: ThreadAtAdmission, trailing: list[UserMessage]) -> Answers:
    """The run's answers to its thread's open interrupts; refused when they answer nothing open, or some only."""
    thread_id = run_input.thread_id
    try:
        answers = read_answers(run_input, thread.waiting.pending, thread.waiting.lost, trailing)
    except ResumeError as exc:
        raise ResumeError(exc.message, code=exc.code, threadId=thread_id, **exc.details) from None
    unanswered = [p.id for p in thread.waiting.pending if p.id not in answers.given]
    if answers.given and unanswered:
        raise ResumeError(f"the run answers some of the thread's open interrupts but not {', '.join(unanswered)}; "
                          "answer every open interrupt in one run", code=ErrorCode.INTERRUPTS_UNANSWERED,
                          threadId=thread_id, interruptIds=unanswered)
    return answers


def _new_text(run_input: RunAgentInput, trailing: list[UserMessage], answers: Answers,
              thread: ThreadAtAdmission) -> str:
    """The run's new user text; a run that answers interrupts may bring none (a client resuming sends its whole
    history: the user messages the thread has seen already are not new)."""
    if not answers:
        return new_user_text(trailing)
    seen = thread.seen()
    fresh = [m for m in run_input.messages if m.id not in seen and m.id not in answers.answer_message_ids]
    try:
        return new_user_text(trailing_user_messages(fresh))
    except NoPromptError:
        return ""
