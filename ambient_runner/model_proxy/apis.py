"""The model APIs the proxy serves: which paths each CLI may call, and in which headers it sends its key.

A CLI only ever gets the proxy's URL and a per-pod placeholder key; the proxy allows the paths of its provider's
API alone (nothing else is forwarded), checks the placeholder, and puts the real credential on the upstream request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelApi:
    name: str
    paths: re.Pattern[str]  # the request paths the CLI may call (matched against the whole path)
    client_auth_headers: tuple[str, ...]  # where the CLI puts its (placeholder) key; never forwarded
    local_prefix: str = ""  # removed from the path before it is appended to the upstream base URL


GEMINI = ModelApi(
    "gemini",
    re.compile(r"/(v1|v1beta|v1alpha)/models/[A-Za-z0-9_-][A-Za-z0-9._-]*"
               r":(streamGenerateContent|generateContent|countTokens|embedContent|batchEmbedContents)"),
    ("x-goog-api-key", "authorization"))
OPENAI_RESPONSES = ModelApi(
    "openai", re.compile(r"/v1/(responses|responses/compact|models)"), ("authorization",), local_prefix="/v1")
# OpenAI Chat Completions, the API of OpenAI-compatible providers (ACP agents: opencode, Qwen Code); its base URL
# ends in /v1 as OPENAI_RESPONSES's does. ``/v1/models/<id>``: one model's card, which some clients read.
OPENAI_CHAT = ModelApi(
    "openai-chat", re.compile(r"/v1/(chat/completions|models|models/[A-Za-z0-9_-][A-Za-z0-9._:-]*)"),
    ("authorization",), local_prefix="/v1")
ANTHROPIC = ModelApi(
    "anthropic", re.compile(r"/v1/messages(/count_tokens)?"), ("x-api-key", "authorization"))


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
