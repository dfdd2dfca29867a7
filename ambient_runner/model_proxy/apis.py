"""The model APIs the proxy serves: which paths each CLI may call, in which headers it sends its key, and how the
proxy sends the real one upstream.

A CLI only ever gets the proxy's URL and a per-pod placeholder key; the proxy allows the paths of its provider's
API alone (nothing else is forwarded), checks the placeholder, and puts the real credential on the upstream request
(``ModelApi.upstream``: the provider's endpoint or a gateway, and the header each kind of key goes in).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

BEARER_HEADER = "authorization"  # its value is "Bearer <key>"


@dataclass(frozen=True)
class ModelApi:
    name: str
    paths: re.Pattern[str]  # the request paths the CLI may call (matched against the whole path)
    client_auth_headers: tuple[str, ...]  # where the CLI puts its (placeholder) key; never forwarded
    local_prefix: str = ""  # removed from the path before it is appended to the upstream base URL
    default_base_url: str = ""  # the provider's endpoint (a deployment's gateway replaces it)
    # (variable, header): the variables a deployment puts a key in, in the order they are read, and the header the
    # API takes each in upstream
    key_headers: tuple[tuple[str, str], ...] = ()

    @property
    def key_variables(self) -> tuple[str, ...]:
        return tuple(variable for variable, _ in self.key_headers)

    def credential_headers(self, keys: Mapping[str, str]) -> dict[str, str]:
        """The upstream's credential headers for the keys set (variable -> key; an unknown variable is ignored)."""
        headers: dict[str, str] = {}
        for variable, header in self.key_headers:
            key = keys.get(variable, "")
            if key and header not in headers:
                headers[header] = f"Bearer {key}" if header == BEARER_HEADER else key
        return headers

    def upstream(self, base_url: str | None, keys: Mapping[str, str]) -> Upstream:
        """Where the proxy forwards (``base_url``, else the provider's endpoint) with the credentials of ``keys``."""
        return Upstream(self, base_url or self.default_base_url, self.credential_headers(keys))


GEMINI = ModelApi(
    "gemini",
    re.compile(r"/(v1|v1beta|v1alpha)/models/[A-Za-z0-9_-][A-Za-z0-9._-]*"
               r":(streamGenerateContent|generateContent|countTokens|embedContent|batchEmbedContents)"),
    ("x-goog-api-key", "authorization"), default_base_url="https://generativelanguage.googleapis.com",
    key_headers=(("GEMINI_API_KEY", "x-goog-api-key"), ("GOOGLE_API_KEY", "x-goog-api-key")))
OPENAI_RESPONSES = ModelApi(
    "openai", re.compile(r"/v1/(responses|responses/compact|models)"), ("authorization",), local_prefix="/v1",
    default_base_url="https://api.openai.com/v1",
    key_headers=(("CODEX_API_KEY", BEARER_HEADER), ("OPENAI_API_KEY", BEARER_HEADER)))
# OpenAI Chat Completions, the API of OpenAI-compatible providers (ACP agents: opencode, Qwen Code); its base URL
# ends in /v1 as OPENAI_RESPONSES's does. ``/v1/models/<id>``: one model's card, which some clients read.
OPENAI_CHAT = ModelApi(
    "openai-chat", re.compile(r"/v1/(chat/completions|models|models/[A-Za-z0-9_-][A-Za-z0-9._:-]*)"),
    ("authorization",), local_prefix="/v1", default_base_url="https://api.openai.com/v1",
    key_headers=(("OPENAI_API_KEY", BEARER_HEADER),))
# An API key goes in x-api-key; a gateway's token and a Claude login's OAuth token as a Bearer token.
ANTHROPIC = ModelApi(
    "anthropic", re.compile(r"/v1/messages(/count_tokens)?"), ("x-api-key", "authorization"),
    default_base_url="https://api.anthropic.com",
    key_headers=(("ANTHROPIC_API_KEY", "x-api-key"), ("ANTHROPIC_AUTH_TOKEN", BEARER_HEADER),
                 ("CLAUDE_CODE_OAUTH_TOKEN", BEARER_HEADER)))


@dataclass(frozen=True)
class Upstream:
    """Where the proxy forwards, and the credential headers it adds (the real key lives only here)."""

    api: ModelApi
    base_url: str  # the provider's endpoint or the deployment's gateway
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def host(self) -> str:
        match = re.match(r"^[a-z]+://(?:[^@/]*@)?([^/?#]+)", self.base_url)  # never a user:password@
        return match.group(1) if match else self.base_url
