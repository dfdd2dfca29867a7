"""Which credentials the Gemini CLI uses, read from the runner's environment.

Modes, first match wins:

* ``scripted``: the runner's offline scripted model (``RUNNER_SCRIPTED_MODEL=true``), a fake key;
* ``vertex``: ``GOOGLE_GENAI_USE_VERTEXAI=true`` with ``GOOGLE_CLOUD_PROJECT`` + ``GOOGLE_CLOUD_LOCATION`` (or
  ``GOOGLE_API_KEY`` for Vertex express mode); ``GOOGLE_APPLICATION_CREDENTIALS`` names a key file if set;
* ``api-key``: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (passed to the CLI as ``GEMINI_API_KEY``), optionally
  through a gateway (``GOOGLE_GEMINI_BASE_URL``);
* ``gateway``: ``GOOGLE_GEMINI_BASE_URL`` alone (the gateway authenticates; the CLI gets a placeholder key);
* ``oauth``: a personal Google login, ``GEMINI_OAUTH_CREDS_FILE`` pointing at a mounted ``oauth_creds.json``;
  it is copied (0600) into the CLI's home in the state dir.

Only the variables the chosen mode needs are passed to the CLI. For the key modes (``scripted``, ``api-key``,
``gateway``) the CLI gets the runner's model proxy and its placeholder instead (``model_upstream``,
``through_proxy``): the real key stays in the runner. The variables are read once, when the bridge is built
(``GeminiCredentials``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import SecretStr

from ambient_runner.model_proxy import GEMINI, ModelProxy, Upstream
from ambient_runner.settings import CredentialSettings

API_KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
VERTEX_VARS = ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")
OAUTH_FILE_VAR = "GEMINI_OAUTH_CREDS_FILE"
GATEWAY_VAR = "GOOGLE_GEMINI_BASE_URL"
OAUTH_CREDS_NAME = "oauth_creds.json"
# Files in the CLI's home that hold credentials: never synced to the state store.
CREDENTIAL_FILE_NAMES = ("oauth_creds.json", "google_accounts.json", "mcp-oauth-tokens.json",
                         "a2a-oauth-tokens.json", "gemini-credentials.json")
SCRIPTED_KEY = "scripted-offline-key"
GATEWAY_PLACEHOLDER_KEY = "gateway-managed"
PROXIED_MODES = ("scripted", "api-key", "gateway")
SELECTED_TYPES = {"scripted": "gemini-api-key", "api-key": "gemini-api-key", "gateway": "gemini-api-key",
                  "vertex": "vertex-ai", "oauth": "oauth-personal"}
ACCEPTED = ("GEMINI_API_KEY or GOOGLE_API_KEY; GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and "
            "GOOGLE_CLOUD_LOCATION; GEMINI_OAUTH_CREDS_FILE (a mounted oauth_creds.json); or GOOGLE_GEMINI_BASE_URL")


class GeminiCredentials(CredentialSettings):
    """The Gemini variables the gemini-cli runner reads (``resolve_auth``), read once when its bridge is built."""

    gemini_api_key: SecretStr = SecretStr("")
    google_api_key: SecretStr = SecretStr("")
    google_gemini_base_url: str = ""
    google_genai_use_vertexai: str = ""
    google_cloud_project: str = ""
    google_cloud_location: str = ""
    google_vertex_base_url: str = ""
    google_application_credentials: str = ""
    gemini_oauth_creds_file: str = ""


@dataclass(frozen=True)
class GeminiAuth:
    mode: str | None  # None: nothing configured
    env: dict[str, str] = field(default_factory=dict)  # variables for the CLI
    secrets: tuple[str, ...] = ()
    oauth_file: Path | None = None
    problem: str = ""  # why the configuration cannot work (empty when fine)
    missing: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.mode is not None and not self.problem

    @property
    def selected_type(self) -> str:
        return SELECTED_TYPES.get(self.mode or "", "gemini-api-key")


def _get(variables: Mapping[str, str], name: str) -> str:
    return variables.get(name, "").strip()


def scripted_auth(base_url: str) -> GeminiAuth:
    return GeminiAuth("scripted", {"GEMINI_API_KEY": SCRIPTED_KEY, GATEWAY_VAR: base_url})


def resolve_auth(variables: Mapping[str, str]) -> GeminiAuth:
    """The credentials configured in ``variables`` (the bridge's ``GeminiCredentials.variables()``)."""
    gateway = _get(variables, GATEWAY_VAR)
    if _get(variables, "GOOGLE_GENAI_USE_VERTEXAI").lower() == "true":
        return _vertex(variables)
    key = _get(variables, "GEMINI_API_KEY") or _get(variables, "GOOGLE_API_KEY")
    if key:
        cli_env = {"GEMINI_API_KEY": key} | ({GATEWAY_VAR: gateway} if gateway else {})
        return GeminiAuth("gateway" if gateway else "api-key", cli_env, (key,))
    oauth = _get(variables, OAUTH_FILE_VAR)
    if oauth:
        path = Path(oauth)
        if not path.is_file():
            return GeminiAuth("oauth", problem=f"{OAUTH_FILE_VAR} points at {oauth}, which is not a readable file.",
                              missing=(OAUTH_FILE_VAR,))
        if not _has_refresh_token(path):  # the CLI would start an interactive login on its protocol channel
            return GeminiAuth("oauth", problem=f"{OAUTH_FILE_VAR} points at {oauth}, which is not a Google login "
                              "(a JSON object with a refresh_token, the oauth_creds.json of `gemini` after a login).",
                              missing=(OAUTH_FILE_VAR,))
        project_id = _get(variables, "GOOGLE_CLOUD_PROJECT")  # a Workspace login needs its Cloud project
        project = {"GOOGLE_CLOUD_PROJECT": project_id} if project_id else {}
        return GeminiAuth("oauth", project, _token_values(path), oauth_file=path)
    if gateway:
        return GeminiAuth("gateway", {"GEMINI_API_KEY": GATEWAY_PLACEHOLDER_KEY, GATEWAY_VAR: gateway})
    # missing: the credentials only; Vertex AI's switch and settings are in the problem's words
    return GeminiAuth(None, problem=f"No Gemini credentials are configured. Set {ACCEPTED}.",
                      missing=(*API_KEY_VARS, OAUTH_FILE_VAR))


def _has_refresh_token(path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("refresh_token"), str) and bool(data["refresh_token"])


def _token_values(path: Path) -> tuple[str, ...]:
    """The tokens in a login credentials file (redacted from events like any other secret)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return ()
    if not isinstance(data, dict):
        return ()
    return tuple(str(v) for k, v in data.items() if "token" in k.lower() and isinstance(v, str) and len(v) >= 8)


def _vertex(env: Mapping[str, str]) -> GeminiAuth:
    cli_env = {"GOOGLE_GENAI_USE_VERTEXAI": "true"}
    secrets: list[str] = []
    for name in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_VERTEX_BASE_URL"):
        if _get(env, name):
            cli_env[name] = _get(env, name)
    express_key = _get(env, "GOOGLE_API_KEY")
    if express_key:
        cli_env["GOOGLE_API_KEY"] = express_key
        secrets.append(express_key)
    credentials = _get(env, "GOOGLE_APPLICATION_CREDENTIALS")
    if credentials:
        if not Path(credentials).is_file():
            return GeminiAuth("vertex", problem=f"GOOGLE_APPLICATION_CREDENTIALS points at {credentials}, which is "
                              "not a readable file.", missing=("GOOGLE_APPLICATION_CREDENTIALS",))
        cli_env["GOOGLE_APPLICATION_CREDENTIALS"] = credentials
    has_project = "GOOGLE_CLOUD_PROJECT" in cli_env and "GOOGLE_CLOUD_LOCATION" in cli_env
    if not has_project and not express_key:
        missing = tuple(n for n in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION") if n not in cli_env)
        return GeminiAuth("vertex", problem="Vertex AI is selected (GOOGLE_GENAI_USE_VERTEXAI=true) but "
                          f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set "
                          "(or set GOOGLE_API_KEY for Vertex express mode).", missing=missing)
    return GeminiAuth("vertex", cli_env, tuple(secrets))


def install_oauth_credentials(auth: GeminiAuth, gemini_dir: Path) -> None:
    """Copy the mounted login credentials into the CLI's home (0600), where the CLI reads them."""
    if auth.oauth_file is None:
        return
    gemini_dir.mkdir(parents=True, exist_ok=True)
    target = gemini_dir / OAUTH_CREDS_NAME
    data = auth.oauth_file.read_bytes()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(target, 0o600)


def model_upstream(auth: GeminiAuth) -> Upstream | None:
    """Where the model proxy forwards for ``auth`` (None: a mode the CLI authenticates itself, e.g. Vertex)."""
    if not auth.ok or auth.mode not in PROXIED_MODES:
        return None
    key = auth.env.get("GEMINI_API_KEY", "")
    return GEMINI.upstream(auth.env.get(GATEWAY_VAR), {"GEMINI_API_KEY": key} if key != GATEWAY_PLACEHOLDER_KEY else {})


def through_proxy(auth: GeminiAuth, proxy: ModelProxy | None) -> GeminiAuth:
    """``auth`` as the CLI sees it when the proxy serves its model API: the proxy's URL and placeholder."""
    if proxy is None or auth.mode not in PROXIED_MODES:
        return auth
    return replace(auth, env={**auth.env, "GEMINI_API_KEY": proxy.placeholder, GATEWAY_VAR: proxy.base_url})
