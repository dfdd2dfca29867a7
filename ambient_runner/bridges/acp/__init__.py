"""RUNNER_TYPE=acp: any ACP agent, by preset (ACP_AGENT)."""
