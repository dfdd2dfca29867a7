"""A one-tool MCP stdio server for the Gemini MCP test: ``say(text)`` answers ``echo: <text>``."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def say(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


if __name__ == "__main__":
    server.run()
