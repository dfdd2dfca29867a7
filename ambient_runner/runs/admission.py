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

from ag_ui.core import RunAgentInput

from ambient_runner.bridges.caller import Caller
from ambient_runner.bridges.contract import Bridge, Capabilities
from ambient_runner.interrupts.human_in_the_loop import HumanInTheLoop
from ambient_runner.runs.attachments import AttachmentRules, collect, discard_written
from ambient_runner.runs.busy import when_busy
from ambient_runner.runs.prompt import new_text, trailing_user_messages, with_context
from ambient_runner.runs.request import RunRequest

IMAGES_ALONE = "See the attached files."  # a message of images alone: the CLIs want some text beside them


@dataclass(frozen=True)
class ThreadAtAdmission:
    """What a run is read against: a person's turn (what its thread waits for: its open interrupts, those a previous
    runner process had open), and the messages the thread has seen (a client resuming a pause sends its whole
    history again)."""

    hitl: HumanInTheLoop
    seen: Callable[[], Collection[str]]


@dataclass(frozen=True)
class Reader:
    """How a ``POST /run`` is read: ``expand`` (a workflow's /command, /skill or @agent as the agent gets it; what
    the person typed stays in the thread), ``ready`` (the bridge, once the runner has started), the attachment rules
    for what that bridge takes (its capabilities), and who sent it."""

    expand: Callable[[str], str]
    ready: Callable[[], Awaitable[Bridge]]
    attachment_rules: Callable[[Capabilities], AttachmentRules]
    caller: Caller


async def read_request(run_input: RunAgentInput, thread: ThreadAtAdmission, reader: Reader) -> RunRequest:
    trailing = trailing_user_messages(run_input.messages)
    answers = thread.hitl.answers(run_input, trailing)
    prompt = with_context(run_input, reader.expand(new_text(run_input, trailing, answers, thread.seen)))
    bridge = await reader.ready()
    props = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else None
    options = bridge.parse_options(props)
    capabilities = bridge.capabilities()  # the parts its CLI takes; whether it steers
    attachments = await collect(run_input, trailing, reader.attachment_rules(capabilities))
    try:
        mode = when_busy(props, capabilities.steering)
    except BaseException:
        discard_written(attachments)  # not admitted: nobody else removes them
        raise
    if not prompt.strip() and attachments:
        prompt = IMAGES_ALONE
    return RunRequest(run_input, prompt, options, tuple(attachments), answers, reader.caller, mode)
