"""The Gemini CLI bridge (RUNNER_TYPE=gemini-cli)."""
