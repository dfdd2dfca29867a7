"""A git server over plain http on 127.0.0.1 that wants a token: ``git http-backend`` behind Basic auth.

A clone succeeds only with a password the server currently accepts (``accepted``, changed to rotate it); every
password presented is recorded (``presented``), so a test sees what the client's credential helper answered.
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


class GitHttpServer:
    def __init__(self, root: Path, accepted: str) -> None:
        self.root = root  # holds <name>.git bare repositories
        self.accepted = accepted
        self.presented: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def url(self, name: str) -> str:
        return f"http://{self.host}/{name}.git"

    def start(self) -> GitHttpServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                auth = self.headers.get("Authorization", "")
                password = ""
                if auth.startswith("Basic "):
                    password = base64.b64decode(auth[6:]).decode(errors="replace").partition(":")[2]
                    server.presented.append(password)
                if password != server.accepted:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": str(server.root),
                       "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": parts.path, "QUERY_STRING": parts.query,
                       "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("content-type", ""),
                       "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "tester", "GIT_CONFIG_NOSYSTEM": "1",
                       "GIT_CONFIG_GLOBAL": os.devnull}
                done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                                      timeout=60, check=False)
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                status = 200
                headers: list[tuple[str, str]] = []
                for line in head.decode(errors="replace").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _serve  # noqa: N815 - http.server's names

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
