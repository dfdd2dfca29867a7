"""The Codex app-server protocol as the runner uses it, in one place: the methods and notifications it sends,
answers and reads, and the experimental fields it relies on (those ``codex app-server generate-json-schema`` lists
only with ``--experimental``). The adapter takes its dropped notifications from here; the rest is what

* ``tests/codex/test_protocol.py`` checks against the pinned binary's generated schema (a method or an experimental
  field that disappears fails, named) and against the code (the adapter's notifications, the bridge's requests), and
* ``make bump RUNNER=codex-sdk`` limits its protocol diff to (``tools/bump``).
"""

from __future__ import annotations

from dataclasses import dataclass

# What the runner sends, through the SDK (``openai_codex``) or its private calls (bridges/codex_sdk/sdk_private.py).
CLIENT_REQUESTS = ("initialize", "thread/start", "thread/resume", "turn/start", "turn/steer", "turn/interrupt",
                   "mcpServerStatus/list")
CLIENT_NOTIFICATIONS = ("initialized",)
# What the app-server asks and the runner answers (bridges/codex_sdk/approvals.py).
SERVER_REQUESTS = ("item/commandExecution/requestApproval", "item/fileChange/requestApproval", "item/tool/call",
                   "item/tool/requestUserInput", "mcpServer/elicitation/request")
# What the adapter translates (ag_ui_codex_sdk/adapter.py's handlers) and what it drops on purpose (its DROPPED).
TRANSLATED = ("item/started", "item/completed", "item/agentMessage/delta", "item/plan/delta",
              "item/reasoning/summaryTextDelta", "item/reasoning/textDelta", "turn/plan/updated",
              "thread/tokenUsage/updated", "error", "turn/completed")
DROPPED = ("turn/started", "thread/started", "thread/status/changed", "item/reasoning/summaryPartAdded",
           "item/commandExecution/outputDelta", "item/fileChange/outputDelta", "serverRequest/resolved",
           "thread/name/updated", "account/rateLimits/updated", "turn/diff/updated")
NOTIFICATIONS = TRANSLATED + DROPPED


@dataclass(frozen=True, slots=True)
class ExperimentalField:
    """A field of a method's params that only the experimental schema has, and the module that sends it."""

    method: str
    field: str
    module: str
    why: str


EXPERIMENTAL = (
    ExperimentalField("thread/start", "dynamicTools", "ambient_runner/bridges/codex_sdk/session.py",
                      "the application's frontend tools, called back with item/tool/call"),
    ExperimentalField("turn/start", "collaborationMode", "ambient_runner/bridges/codex_sdk/session.py",
                      "mode plan: Codex's plan collaboration mode, in which the model may ask questions"),
)
