"""MCP servers: the runner-level configuration, its rendering per CLI, tool names and status."""
