"""The backend's answers for the person's connected accounts, as models (``CredentialStore.deliver`` reads them).

The backend's shapes are lenient and so are these: an unknown key is ignored, a missing one is empty, a text field
takes any JSON value (``None``, ``""``, ``0`` or ``false`` as empty, anything else as its text), and a value the
runner only passes on (Google's token, Gerrit's fields) stays the JSON value it was. An answer that is no JSON object
(or, for Gerrit, no list of them) is no account.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, ValidationError


def _text(value: object) -> str:
    return str(value or "")


Text = Annotated[str, BeforeValidator(_text)]
Account = TypeVar("Account", bound="Payload")


class Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    @classmethod
    def of(cls: type[Account], value: object) -> Account | None:
        """The account ``value`` holds, or None when it is no JSON object of this shape."""
        if not isinstance(value, dict):
            return None
        try:
            return cls.model_validate(value)
        except ValidationError:
            return None


class GitAccount(Payload):
    """GitHub's or GitLab's answer."""

    token: Text = ""
    user_name: Text = Field("", alias="userName")
    email: Text = ""
    instance_url: Text = Field("", alias="instanceUrl")  # GitLab's own instance


class JiraAccount(Payload):
    url: Text = ""
    email: Text = ""
    api_token: Text = Field("", alias="apiToken")
    token: Text = ""

    @property
    def the_token(self) -> str:
        return self.api_token or self.token


class GoogleAccount(Payload):
    email: Text = ""
    access_token: JsonValue = Field(None, alias="accessToken")  # passed on as it came
    refresh_token: JsonValue = Field("", alias="refreshToken")
    scopes: JsonValue = Field(default_factory=list)
    expires_at: Text = Field("", alias="expiresAt")
    token: Text = ""  # a service account's key


class ApiKeyAccount(Payload):
    """CodeRabbit's answer."""

    api_key: Text = Field("", alias="apiKey")


class TokenAccount(Payload):
    """The kubeconfig's answer."""

    token: Text = ""


class McpAccount(Payload):
    """An MCP server's fields (``mcp/<server>``)."""

    fields: dict[str, JsonValue]


class GerritInstance(Payload):
    instance_name: JsonValue = Field("", alias="instanceName")
    url: JsonValue = ""
    auth_method: JsonValue = Field(None, alias="authMethod")
    username: JsonValue = ""
    http_token: JsonValue = Field("", alias="httpToken")
    gitcookies_content: Text = Field("", alias="gitcookiesContent")


def gerrit_instances(value: object) -> list[GerritInstance]:
    """Gerrit's answer: ``{"instances": [...]}`` or the list itself; what is no object in it is left out."""
    listed = value.get("instances") if isinstance(value, dict) else value
    if not isinstance(listed, list):
        return []
    return [instance for item in listed if (instance := GerritInstance.of(item)) is not None]
