"""AG-UI adapter for OpenAI Codex (``openai-codex`` SDK / ``codex app-server`` notifications).

Pure translation, no process handling::

    adapter = CodexEventAdapter(thread_id, run_id, model="gpt-5.5")
    async for event in adapter.stream(turn.stream()):   # SDK notifications in, AG-UI events out
        ...
"""

from ag_ui_codex_sdk.adapter import CodexEventAdapter
from ag_ui_codex_sdk.errors import describe_failure
from ag_ui_codex_sdk.notifications import to_wire

__all__ = ["CodexEventAdapter", "describe_failure", "to_wire"]
