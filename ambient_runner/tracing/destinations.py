"""Where traces go, from the settings (``TracingSettings``): the standard ``OTEL_EXPORTER_OTLP_*`` variables, the
platform's Langfuse variables and its MLflow variables, each as an OTLP/HTTP traces endpoint with its headers.
Nothing configured: no destination, and the runner creates no tracer at all.

MLflow's OTLP endpoint wants the experiment's id (``x-mlflow-experiment-id``): ``MLFLOW_EXPERIMENT_NAME`` is resolved
through its REST API, the experiment created if it does not exist (``resolve_mlflow``).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from dataclasses import dataclass, field
from urllib.parse import unquote

import httpx

from ambient_runner.settings import TracingSettings

log = logging.getLogger(__name__)
MLFLOW_DEFAULT_EXPERIMENT = "ambient-code-sessions"  # the platform's default
MLFLOW_TIMEOUT = 10.0
PUBLIC_HEADERS = frozenset({"x-langfuse-ingestion-version", "x-mlflow-experiment-id"})


@dataclass(frozen=True)
class Destination:
    name: str  # "otlp" | "langfuse" | "mlflow"
    endpoint: str  # the OTLP/HTTP traces url
    headers: dict[str, str] = field(default_factory=dict)
    tracking_uri: str = ""  # MLflow: its REST API (feedback becomes an assessment there)
    experiment_name: str = ""

    @property
    def secrets(self) -> list[str]:
        """Header values that may be credentials (never logged, never in an event or a span)."""
        return [v for k, v in self.headers.items() if k.lower() not in PUBLIC_HEADERS and v]


def _on(value: str | None, *, lenient: bool = False) -> bool:
    text = (value or "").strip().lower()
    return text not in ("", "0", "false", "no", "off") if lenient else text in ("1", "true", "yes", "on")


def _otlp_headers(text: str) -> dict[str, str]:
    """``k1=v1,k2=v2`` (values url-encoded), as the OpenTelemetry specification writes them."""
    headers = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip())] = unquote(value.strip())
    return headers


def destinations(config: TracingSettings) -> list[Destination]:
    """Every configured destination (MLflow's still without its experiment id: see ``resolve_mlflow``)."""
    found: list[Destination] = []
    traces = config.otel_exporter_otlp_traces_endpoint.strip()
    base = config.otel_exporter_otlp_endpoint.strip()
    if (traces or base) and config.otel_traces_exporter.strip().lower() != "none":
        headers = _otlp_headers(config.otel_exporter_otlp_headers.get_secret_value())
        headers |= _otlp_headers(config.otel_exporter_otlp_traces_headers.get_secret_value())
        found.append(Destination("otlp", traces or f"{base.rstrip('/')}/v1/traces", headers))
    if _on(config.langfuse_enabled, lenient=True):
        host = config.langfuse_host.strip().rstrip("/")
        public, secret = config.langfuse_public_key.strip(), config.langfuse_secret_key.get_secret_value().strip()
        if host and public and secret:
            basic = base64.b64encode(f"{public}:{secret}".encode()).decode()
            found.append(Destination("langfuse", f"{host}/api/public/otel/v1/traces", {
                "Authorization": f"Basic {basic}", "x-langfuse-ingestion-version": "4"}, tracking_uri=host))
        else:
            log.warning("LANGFUSE_ENABLED is set but LANGFUSE_HOST, LANGFUSE_PUBLIC_KEY or LANGFUSE_SECRET_KEY is "
                        "missing: no traces to Langfuse")
    if _on(config.mlflow_tracing_enabled):
        uri = config.mlflow_tracking_uri.strip().rstrip("/")
        if uri.startswith(("http://", "https://")):
            name = config.mlflow_experiment_name.strip() or MLFLOW_DEFAULT_EXPERIMENT
            found.append(Destination("mlflow", f"{uri}/v1/traces", _mlflow_auth(config), tracking_uri=uri,
                                     experiment_name=name))
        else:
            log.warning("MLFLOW_TRACING_ENABLED is set but MLFLOW_TRACKING_URI is not an http(s) url: no traces to "
                        "MLflow")
    return found


def _mlflow_auth(config: TracingSettings) -> dict[str, str]:
    """MLflow's own credential variables, as the header its server wants."""
    token = config.mlflow_tracking_token.get_secret_value().strip()
    if token:
        return {"Authorization": f"Bearer {token}"}
    user, password = config.mlflow_tracking_username, config.mlflow_tracking_password.get_secret_value()
    if user and password:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
    return {}


def shown(url: str) -> str:
    """``url`` without any ``user:password@`` in it, for a log line."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else url


async def resolve_mlflow(destination: Destination) -> Destination | None:
    """The MLflow destination with its experiment id header (the experiment created when missing); ``None`` when
    the tracking server cannot be reached or answers nonsense (logged once: traces are then not sent there)."""
    api = f"{destination.tracking_uri}/api/2.0/mlflow/experiments"
    name = destination.experiment_name
    try:
        async with asyncio.timeout(MLFLOW_TIMEOUT), httpx.AsyncClient(
                timeout=MLFLOW_TIMEOUT, trust_env=False, headers=destination.headers) as client:
            for attempt in range(2):
                found = await client.get(f"{api}/get-by-name", params={"experiment_name": name})
                if found.status_code == 200:
                    experiment_id = str(found.json()["experiment"]["experiment_id"])
                    return Destination(destination.name, destination.endpoint,
                                       {**destination.headers, "x-mlflow-experiment-id": experiment_id},
                                       destination.tracking_uri, name)
                if found.status_code != 404 or attempt:
                    found.raise_for_status()
                created = await client.post(f"{api}/create", json={"name": name})
                if created.status_code not in (200, 400):  # 400: created meanwhile by another pod
                    created.raise_for_status()
    except (httpx.HTTPError, KeyError, ValueError, TypeError, AttributeError, TimeoutError) as exc:
        log.warning("MLflow at %s: cannot resolve experiment %r (%s); no traces to MLflow",
                    shown(destination.tracking_uri), name, type(exc).__name__)
    return None
