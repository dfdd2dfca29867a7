"""A one-tool MCP stdio server for the MCP tests: ``say(text)`` answers ``echo: <text>``.

When ``ECHO_SECRET`` is in its environment the answer also carries the secret's SHA-256 prefix, so a test can
see that an ``${VAR}`` reference reached the server without the secret itself appearing anywhere.
"""

import hashlib
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def say(text: str = "hello") -> str:
    """Echo the text back."""
    answer = f"echo: {text}"
    secret = os.environ.get("ECHO_SECRET")
    if secret:
        answer += f" [secret sha256:{hashlib.sha256(secret.encode()).hexdigest()[:12]}]"
    return answer


if __name__ == "__main__":
    server.run()
