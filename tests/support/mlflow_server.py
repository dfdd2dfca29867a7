"""A real MLflow tracking server for the tests: ``mlflow server`` from its own pinned venv (``.venv-mlflow``, made by
``make install`` from ``tests/mlflow_server/requirements.lock``), SQLite behind it, on 127.0.0.1; and the REST calls
a test reads traces and assessments back with."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from runner_process import free_port

MLFLOW = Path(__file__).resolve().parents[2] / ".venv-mlflow" / "bin" / "mlflow"
START_TIMEOUT = 180.0  # s: it imports pandas, sqlalchemy and runs its migrations (about 25 s on 2 busy cores)


class MlflowServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = root / "mlflow.log"

    def start(self) -> MlflowServer:
        assert MLFLOW.exists(), f"{MLFLOW} is missing: run `make install` (it makes .venv-mlflow)"
        self.root.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "OTEL_"))}
        env |= {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "NO_PROXY": "*"}
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(MLFLOW), "server", "--backend-store-uri", f"sqlite:///{self.root / 'mlflow.db'}",
                 "--default-artifact-root", str(self.root / "artifacts"), "--host", "127.0.0.1",
                 "--port", str(self.port), "--workers", "1"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=self.root)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mlflow server exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2, trust_env=False).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer /health in {START_TIMEOUT:.0f} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    # ----- reading back ------------------------------------------------------------------------------------
    def experiment_id(self, name: str) -> str:
        response = httpx.get(f"{self.url}/api/2.0/mlflow/experiments/get-by-name",
                             params={"experiment_name": name}, trust_env=False)
        response.raise_for_status()
        return response.json()["experiment"]["experiment_id"]

    def traces(self, experiment_id: str) -> list[dict[str, Any]]:
        response = httpx.post(f"{self.url}/api/3.0/mlflow/traces/search", trust_env=False, json={
            "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}],
            "max_results": 100})
        response.raise_for_status()
        return response.json().get("traces", [])

    def trace(self, trace_id: str) -> dict[str, Any]:
        response = httpx.get(f"{self.url}/api/3.0/mlflow/traces/get", params={"trace_id": trace_id},
                             trust_env=False)
        response.raise_for_status()
        return response.json()["trace"]


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes from ``traces/get`` (OTel-typed values, or JSON text as MLflow stores some)."""
    import json

    found: dict[str, Any] = {}
    raw = span.get("attributes", {})
    items = raw.items() if isinstance(raw, dict) else ((a["key"], a["value"]) for a in raw)
    for key, value in items:
        if isinstance(value, dict) and len(value) == 1:
            value = next(iter(value.values()))
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        found[key] = value
    return found
