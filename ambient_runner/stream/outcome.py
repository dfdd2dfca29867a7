"""How a run ended, as the stream guard reads it from the run's terminal event: ``success``, ``error``
(``RUN_ERROR``), ``cancelled`` or ``interrupt`` (waiting for a person). ``None`` where a run has no terminal event
(yet). The metrics' ``outcome`` label, the after-run hooks and the traces use these words."""

from __future__ import annotations

from typing import Literal

RunOutcome = Literal["success", "error", "cancelled", "interrupt"]
