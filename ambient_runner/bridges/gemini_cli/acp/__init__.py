"""The Gemini CLI over ACP (``gemini --acp``): the JSON-RPC channel, the pod's one live CLI, its sessions' files,
the approvals, and the turns."""
