"""The one ACP client (Agent Client Protocol v1 over stdio) every ACP runner shares: the JSON-RPC connection, the
live agent process, a prompt's feed, the approvals and the turn hooks. A runner names its agent (``AgentName``),
its modes, its session files and its fallback."""
