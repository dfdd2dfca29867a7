"""What a thread's runs share in the stream guard: the message and tool-call ids already used (each must be unique
within the thread, so a reused one is sent as ``<id>~2``), the tool calls started, and the sub-agents a run left
suspended (``stream/subagents.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ag_ui.core import SubagentStartedEvent


@dataclass
class ThreadIds:
    """Ids already used in a thread (message ids and tool-call ids must be unique within it)."""

    used: set[str] = field(default_factory=set)
    tool_calls: dict[str, str] = field(default_factory=dict)  # started tool call (final id) -> its name
    # Sub-agents whose segment a run ended as suspended (waiting for a person): the next run that hears from one
    # announces it again, with the start event it had.
    suspended: dict[str, SubagentStartedEvent] = field(default_factory=dict)

    def claim(self, wanted: str) -> str:
        final, n = wanted, 1
        while final in self.used:
            n += 1
            final = f"{wanted}~{n}"
        self.used.add(final)
        return final
