"""``RUNNER_MODEL_GATEWAY_HEADERS``: extra headers the proxy puts on every upstream request (a gateway's own
authentication, a tenant header). A JSON object of header name to value; the values count as credentials."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ag_ui_cli_common.errors import ErrorCode, RunnerError

GATEWAY_HEADERS_VAR = "RUNNER_MODEL_GATEWAY_HEADERS"


class GatewayHeadersError(RunnerError, ValueError):
    code = ErrorCode.SETTINGS_INVALID


def gateway_headers(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    raw = (os.environ if environ is None else environ).get(GATEWAY_HEADERS_VAR, "").strip()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise GatewayHeadersError(f"{GATEWAY_HEADERS_VAR} must be a JSON object of header names to values") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise GatewayHeadersError(f"{GATEWAY_HEADERS_VAR} must be a JSON object of header names to string values")
    return {k.strip().lower(): v for k, v in data.items() if k.strip()}
