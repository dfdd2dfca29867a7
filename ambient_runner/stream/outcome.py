"""How a run ended, as the stream guard reads it from the run's terminal event: ``success``, ``error``
(``RUN_ERROR``), ``cancelled`` or ``interrupt`` (waiting for a person). ``None`` where a run has no terminal event
(yet). The metrics' ``outcome`` label, the after-run hooks and the traces use these words. ``Ending``: how the runner
ends a run itself (the bridge sent no terminal event, or the run is being stopped)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ag_ui.core import TokenUsage

from ag_ui_cli_common.errors import ErrorCode

RunOutcome = Literal["success", "error", "cancelled", "interrupt"]


@dataclass(frozen=True)
class Ending:
    """How a run ended when the bridge did not send (or is overridden on) its terminal event."""

    error_message: str | None = None
    error_code: ErrorCode | None = None
    cancelled: bool = False
    usage: list[TokenUsage] | None = None
