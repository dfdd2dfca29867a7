"""The secrets in the backend's credential answers: every value a tool or a log could show, redacted from the
moment it is fetched (``platform.run_credentials``)."""

from __future__ import annotations

import re
from collections.abc import Mapping

SECRET_FIELDS = ("token", "apiToken", "accessToken", "refreshToken", "apiKey", "httpToken")
KUBE_SECRET_LINE = re.compile(r"^\s*(?:token|client-key-data|client-certificate-data|password|id-token|"
                              r"refresh-token|access-token)\s*:\s*[\"']?([^\s\"']+)", re.MULTILINE)
MIN_SECRET = 6


def _secret_values(data: object) -> list[str]:
    if isinstance(data, list):
        return [s for item in data for s in _secret_values(item)]
    if not isinstance(data, dict):
        return []
    found = [str(data[f]) for f in SECRET_FIELDS if isinstance(data.get(f), str)]
    cookies = data.get("gitcookiesContent")
    if isinstance(cookies, str):
        found += [line.split("\t")[-1] for line in cookies.splitlines() if line.strip()]
    for value in data.values():
        if isinstance(value, (dict, list)):
            found += _secret_values(value)
    return [s for s in found if len(s) >= MIN_SECRET]


def secrets_of(values: Mapping[str, object]) -> list[str]:
    """Every credential value in a fetch's answers (redacted from then on, wherever it would show)."""
    found: list[str] = []
    for kind, data in values.items():
        found += _secret_values(data)
        if kind.startswith("mcp/") and isinstance(data, dict) and isinstance(data.get("fields"), dict):
            found += [str(v) for v in data["fields"].values() if len(str(v)) >= MIN_SECRET]
        if kind == "kubeconfig" and isinstance(data, dict) and isinstance(data.get("token"), str):
            found += [m for m in KUBE_SECRET_LINE.findall(data["token"]) if len(m) >= MIN_SECRET]
    return found


