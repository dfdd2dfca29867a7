"""The Gemini CLI over ACP (``gemini --acp``) as a preset of the shared ACP client (``bridges.acp_client``): how it
is named, the session mode of an approval policy, and its sessions' files (``session_files``)."""

from __future__ import annotations

from ambient_runner.bridges.acp_client.connection import AgentName

GEMINI = AgentName(name="The Gemini CLI", label="gemini --acp",
                   not_acp_hint="A login prompt here means the mounted Google login (GEMINI_OAUTH_CREDS_FILE) is "
                                "not valid.")
WHO = "Gemini"  # in a question card: "Gemini wants to run a command"


def session_mode(policy: str, plan: bool) -> str:
    """Under ``auto`` a session runs in mode ``yolo`` (nothing asks), under ``ask`` in ``default`` (every tool that
    changes something asks), in plan mode ``plan`` (read-only tools only)."""
    if plan:
        return "plan"
    return "default" if policy == "ask" else "yolo"
