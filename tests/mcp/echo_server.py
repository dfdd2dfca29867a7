"""A one-tool MCP server for the MCP tests: ``say(text)`` answers ``echo: <text>``. On stdio; or, given
``streamable-http PORT`` or ``sse PORT``, on 127.0.0.1:PORT (``/mcp``, ``/sse``).

When ``ECHO_SECRET`` is in its environment the answer also carries the secret's SHA-256 prefix, so a test can
see that an ``${VAR}`` reference reached the server without the secret itself appearing anywhere.
"""

import hashlib
import os
import sys

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
    if len(sys.argv) == 3:
        server.run(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]))  # type: ignore[arg-type]
    else:
        server.run()
