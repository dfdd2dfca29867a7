"""Runner settings, read from the environment once at start.

Every field is the variable of its name in capitals (``runner_type`` is ``RUNNER_TYPE``, matched without regard to
case); a value given to ``RunnerSettings(...)`` wins over the environment. A bad value stops the process at start
with one line naming the variable and what it accepts (``load_settings``). pydantic-settings reads them
(``BaseSettings``; its share of an idle runner's memory is in docs/deployment.md).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ambient_runner.mcp.config import McpConfig, McpConfigError, load_mcp_config, parse_mcp_json, read_mcp_file

log = logging.getLogger(__name__)

RUNNER_TYPES = ("claude", "gemini-cli", "codex-sdk", "acp")
RUNNER_TYPE_ALIASES = {"claude-agent-sdk": "claude"}
DEFAULT_STATE_DIRS = {"claude": ".claude", "gemini-cli": ".gemini", "codex-sdk": ".codex", "acp": ".acp"}
ALL_IN_ONE_IMAGE = "ambient-runner"


# the ACP presets with an image of their own (deploy/image/acp/<agent>/)
ACP_IMAGE_AGENTS = ("opencode", "claude-agent-acp", "qwen-code", "codex-acp")


def image_for(runner_type: str, acp_agent: str = "opencode") -> str:
    """The image that holds one runner (built with the Dockerfile's build arg ``RUNNER_TYPE``); the ACP runner's is
    one per agent (build arg ``ACP_AGENT``): ``ambient-runner-acp-<agent>``."""
    if runner_type == "acp":
        return f"{ALL_IN_ONE_IMAGE}-acp-{acp_agent}"
    return f"{ALL_IN_ONE_IMAGE}-{runner_type}"


def gateway_headers(raw: str) -> dict[str, str]:
    """``RUNNER_MODEL_GATEWAY_HEADERS``'s JSON object of header names to values (names lower-cased, blank ones
    dropped); a ``ValueError`` that names what it must be."""
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise ValueError("must be a JSON object of header names to values") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError("must be a JSON object of header names to string values")
    return {k.strip().lower(): v for k, v in data.items() if k.strip()}


# the variables whose value a bad-setting message never shows (they hold credentials)
NOT_SHOWN = ("AGUI_TOKEN", "MCP_SERVERS_JSON", "RUNNER_MODEL_GATEWAY_HEADERS")


class SettingsError(SystemExit):
    """Raised at start for a bad setting; its message is the one line the operator sees."""


class TracingSettings(BaseSettings):
    """Where traces go (``tracing.destinations``): the standard ``OTEL_EXPORTER_OTLP_*`` variables, the platform's
    Langfuse and MLflow variables. Switches stay text: the destinations read them as their tools do."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    otel_exporter_otlp_traces_endpoint: str = ""
    otel_exporter_otlp_endpoint: str = ""
    otel_traces_exporter: str = "otlp"
    otel_exporter_otlp_headers: SecretStr = SecretStr("")
    otel_exporter_otlp_traces_headers: SecretStr = SecretStr("")
    langfuse_enabled: str = ""
    langfuse_host: str = ""
    langfuse_public_key: str = ""
    langfuse_secret_key: SecretStr = SecretStr("")
    mlflow_tracing_enabled: str = ""
    mlflow_tracking_uri: str = ""
    mlflow_experiment_name: str = ""
    mlflow_tracking_token: SecretStr = SecretStr("")
    mlflow_tracking_username: str = ""
    mlflow_tracking_password: SecretStr = SecretStr("")


class S3Settings(BaseSettings):
    """Where an ``s3://`` state store is served: the usual AWS variables (``AWS_ENDPOINT_URL_S3`` /
    ``AWS_ENDPOINT_URL`` for an S3-compatible server, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``). Credentials stay
    with boto3's own chain (keys, web identity), never in the settings."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    aws_endpoint_url_s3: str = ""
    aws_endpoint_url: str = ""
    aws_region: str = ""
    aws_default_region: str = ""
    state_store_s3_addressing_style: Literal["auto", "path", "virtual"] | None = Field(
        None, description="S3 addressing style; default path with a custom endpoint, else auto")

    @property
    def endpoint(self) -> str | None:
        return self.aws_endpoint_url_s3.strip() or self.aws_endpoint_url.strip() or None

    @property
    def region(self) -> str:
        return self.aws_region.strip() or self.aws_default_region.strip() or "us-east-1"

    @property
    def addressing_style(self) -> str:
        return self.state_store_s3_addressing_style or ("path" if self.endpoint else "auto")


class CredentialSettings(BaseSettings):
    """The base of a runner's model credentials (``ClaudeCredentials``, ``GeminiCredentials``, ...): each field is the
    variable of its name in capitals (any case), read once when the runner's bridge is built; a credential is a
    ``SecretStr``, so it never shows in a repr or a log. Read as text: the runner's credential resolution decides
    what a value means, and names the variable when it cannot be used."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    def variables(self) -> dict[str, str]:
        """The variables set (not empty), by name, with their values, credentials revealed: what the runner's
        credential resolution reads."""
        found: dict[str, str] = {}
        for name, value in self:
            text = value.get_secret_value() if isinstance(value, SecretStr) else value
            if isinstance(text, str) and text:
                found[name.upper()] = text
        return found


class RunnerSettings(BaseSettings):
    """Every setting, from the environment (any case: ``RUNNER_TYPE`` for ``runner_type``); a value passed in wins.
    No ``.env`` file is read: the pod's environment is the configuration."""

    model_config = SettingsConfigDict(extra="ignore", validate_default=True, case_sensitive=False)

    # Set by the Dockerfile (its build arg RUNNER_TYPE): the runners whose CLI and SDK the image holds.
    ambient_runner_image_runners: str = Field("", description="all, or the one runner this image holds")
    runner_type: str = Field("gemini-cli", description="claude | claude-agent-sdk | gemini-cli | codex-sdk | acp")
    acp_agent: str = Field("opencode", description="RUNNER_TYPE=acp: the agent's preset (opencode | claude-agent-acp "
                                                   "| custom)")
    acp_agent_command: str = Field("", description="RUNNER_TYPE=acp: the agent's own ACP command line (overrides the "
                                                   "preset's; with ACP_AGENT=custom, any ACP agent)")
    acp_agent_model_api: Literal["", "anthropic", "openai-responses", "openai-chat", "gemini"] = Field(
        "", description="RUNNER_TYPE=acp: the model API the agent speaks (default: the preset's)")
    workspace_path: Path = Field(Path("/workspace"), description="the CLI's working directory")
    runner_state_root: Path = Field(Path(tempfile.gettempdir()) / "ambient-runner-state",
                                    description="parent of RUNNER_STATE_DIR; outside WORKSPACE_PATH",
                                    validate_default=True)
    runner_state_dir: str = Field("", description="the CLI's state dir name (.claude, .gemini, .codex)")
    session_id: str = Field("local", description="the platform's session id")
    initial_prompt: str = Field("", description="a run the runner starts itself at startup")
    agui_token: SecretStr | None = Field(None, description="bearer token required on every endpoint but /health")
    agui_host: str = "0.0.0.0"
    agui_port: int = Field(8001, ge=1, le=65535)
    runner_idle_timeout: float = Field(900.0, gt=0, description="s without any event from the agent")
    runner_run_timeout: float = Field(3600.0, gt=0, description="s wall clock per run")
    runner_interrupt_grace: float = Field(5.0, gt=0, description="s a CLI has to stop after an interrupt")
    runner_shutdown_grace: float = Field(20.0, gt=0, description="s to drain runs on SIGTERM")
    runner_max_line_bytes: int = Field(8 * 1024 * 1024, ge=1024, description="longest CLI output line kept")
    runner_event_memory: int = Field(2048, ge=16, description="events per thread kept in memory for replay")
    runner_event_spool_bytes: int = Field(
        64 * 1024 * 1024, ge=0, description="a thread's replay spool starts again at a run's start once it is larger")
    runner_events_dir: Path | None = Field(None, description="where replayable events are spooled")
    runner_scripted_model: bool = Field(False, description="serve the built-in offline scripted model")
    runner_default_model: str | None = Field(None, description="model when a run names none")
    runner_models: str = Field("", description="comma-separated models this deployment offers")
    runner_default_mode: Literal["default", "plan"] = Field("default", description="mode when a run names none")
    runner_approval_policy: Literal["auto", "ask"] = Field(
        "auto", description="ask: shell commands, file changes and MCP tools wait for a person's approval")
    runner_interrupt_timeout: float = Field(3600.0, gt=0, description="s an approval or question waits for an answer")
    mcp_servers_json: str = Field("", description='MCP servers, {"mcpServers": {name: {...}}} as JSON text')
    runner_model_gateway_headers: SecretStr = Field(
        SecretStr(""), description="headers the model proxy adds to every upstream request (a gateway's own "
                                   "authentication, a tenant header), a JSON object of names to values; credentials")
    mcp_config_file: Path | None = Field(None, description="a mounted file with the MCP servers JSON")
    mcp_disabled_servers: str = Field("", description="comma-separated MCP server names to leave out")
    runner_log_level: Literal["debug", "info", "warning", "error"] = "info"
    state_store_url: str = Field("", description="durable store of the state dir: file:///path or s3://bucket/prefix")
    s3: S3Settings = Field(default_factory=S3Settings, description="where an s3:// state store is served")
    runner_sync_interval: float = Field(30.0, gt=0, description="s between state syncs while a run is active")
    runner_sync_timeout: float = Field(30.0, gt=0, description="s the final state sync on shutdown may take")
    runner_model_proxy: bool = Field(
        True, description="serve each CLI's model API through the runner's proxy (the CLI never holds the key)")
    runner_max_queued: int = Field(8, ge=0, description="messages a busy thread queues before a 429 QUEUE_FULL")
    runner_max_live_clis: int = Field(
        4, ge=1, description="CLI processes kept alive per pod (Claude runs one per thread): beyond it the least "
                             "recently used idle one is closed, and its thread resumes its saved session next time")
    runner_settle_timeout: float = Field(
        60.0, gt=0, description="s a thread's next run waits for the previous run's clean-up before a 503")
    claude_cli_path: str = Field("", description="RUNNER_TYPE=claude: the Claude Code binary (default: the SDK's "
                                                 "bundled one, else `claude` on PATH)")
    claude_setting_sources: str = Field("", description="RUNNER_TYPE=claude: `user` loads the state dir's user "
                                                        "settings (a repository's settings never load)")
    gemini_cli_path: str = Field("", description="RUNNER_TYPE=gemini-cli: the gemini executable (default: the repo's "
                                                 "node_modules/.bin/gemini, else gemini on PATH)")
    gemini_transport: str = Field("", description="RUNNER_TYPE=gemini-cli: acp (default: one live `gemini --acp`) or "
                                                  "stream-json (a `gemini -p` process a turn)")
    gemini_cli_max_attempts: str = Field("", description="the Gemini CLI's attempts per model request (1-10; "
                                                         "default 3)")
    claude_code_max_retries: int = Field(2, ge=0, description="Claude Code's retries of a failed model request (the "
                                                              "claude runner and claude-agent-acp)")
    # The platform's own variables (its operator sets them): read as text, so a value the runner cannot use is
    # never what stops it (ambient_runner.platform).
    backend_api_url: str = Field("", description="the platform backend's API, which starts the first turn")
    project_name: str = Field("", description="the platform project (namespace) of this session")
    agentic_session_namespace: str = Field("", description="the same, older name")
    is_resume: str = Field("", description="'true' when the platform restarts a session that already ran")
    runner_bot_token_file: Path = Field(Path("/var/run/secrets/ambient/bot-token"),
                                        description="the platform's bot token, read fresh on every call")
    credential_ids: str = Field("", description="JSON map of credential kind -> id on the backend's credentials API")
    credential_mcp_urls: str = Field("", description="JSON map of provider -> credential sidecar URL (those "
                                                     "providers are never fetched)")
    keep_credentials_persistent: str = Field("", description="'true': a run's connected accounts stay after it "
                                                             "ends (else cleared after every run)")
    runner_credentials_timeout: float = Field(10.0, gt=0, description="s the fetch of the connected accounts may "
                                                                      "take before a run")
    runner_credentials_dir: Path = Field(default_factory=lambda: Path(tempfile.gettempdir()) /
                                         f"ambient-runner-credentials-{os.getpid()}",
                                         description="where the agent's tools find the connected accounts; outside "
                                                     "WORKSPACE_PATH and the state dir", validate_default=True)
    runner_github_hosts: str = Field("github.com", description="comma-separated git hosts that get the GitHub "
                                                               "token (besides *.github.com, *.ghe.com)")
    google_oauth_client_id: str = Field("", description="the OAuth client Google Workspace's MCP server refreshes "
                                                        "the person's token with")
    google_oauth_client_secret: SecretStr | None = Field(None, description="its secret")
    active_workflow_git_url: str = Field("", description="the session's workflow repository (the platform's)")
    active_workflow_branch: str = Field("", description="its branch (default main)")
    active_workflow_path: str = Field("", description="its folder in the repository")
    runner_max_file_bytes: int = Field(10 * 1024 * 1024, ge=1, description="largest file the content calls read or "
                                                                            "write")
    runner_max_attachment_bytes: int = Field(20 * 1024 * 1024, ge=1, description="largest image or document part "
                                                                                 "of a user message, decoded")
    runner_fetch_urls: bool = Field(False, description="fetch http(s) urls of a message's parts (never a private "
                                                       "or loopback address)")
    runner_attachments_dir: Path = Field(Path(tempfile.gettempdir()) / "ambient-runner-attachments",
                                         description="where a message's parts are written for the CLI; outside "
                                                     "WORKSPACE_PATH", validate_default=True)
    runner_trace_content: bool = Field(False, description="put prompts, outputs and tool arguments into trace "
                                                          "spans (redacted)")
    otel_service_name: str = Field("", description="the traces' service.name (default ambient-runner)")
    tracing: TracingSettings = Field(default_factory=TracingSettings, description="where traces go")
    runner_first_turn_backoff: float = Field(
        2.0, gt=0, description="s before the first retry of the first-turn POST (doubling, at most 30 s)")

    @field_validator("ambient_runner_image_runners")
    @classmethod
    def _image_runners(cls, value: str) -> str:
        names = [RUNNER_TYPE_ALIASES.get(n.strip(), n.strip()) for n in value.split(",") if n.strip()]
        if names in ([], ["all"]):
            return ""
        if any(name not in RUNNER_TYPES for name in names):
            raise ValueError(f"must be all or one of {', '.join(RUNNER_TYPES)} (the image's build arg RUNNER_TYPE)")
        return ",".join(names)

    @field_validator("runner_type")
    @classmethod
    def _known_runner(cls, value: str, info: ValidationInfo) -> str:
        value = value.strip()
        value = RUNNER_TYPE_ALIASES.get(value, value)
        if value not in RUNNER_TYPES:
            raise ValueError(f"must be one of {', '.join(RUNNER_TYPES + tuple(RUNNER_TYPE_ALIASES))}")
        image = info.data.get("ambient_runner_image_runners")
        if image and value not in image.split(","):
            where = f"the image {image_for(value)} (or the all-in-one image {ALL_IN_ONE_IMAGE})"
            if value == "acp":  # one image per agent, none in the all-in-one image
                where = f"the image of its agent ({', '.join(image_for(value, a) for a in ACP_IMAGE_AGENTS)})"
            raise ValueError(f"this image holds only the {image.replace(',', ', ')} runner; {value} runs in {where}")
        return value

    @field_validator("runner_state_root", "runner_attachments_dir", "runner_credentials_dir")
    @classmethod
    def _outside_workspace(cls, value: Path, info: ValidationInfo) -> Path:
        workspace = info.data.get("workspace_path")
        if workspace is not None:
            root, inside = value.resolve(), Path(workspace).resolve()
            if root == inside or inside in root.parents:
                what = {"runner_state_root": "the CLI's state and credentials",
                        "runner_credentials_dir": "the connected accounts"}.get(info.field_name or "",
                                                                                "a message's attachments")
                raise ValueError(f"must lie outside WORKSPACE_PATH ({workspace}): {what} do not belong in the "
                                 "user's repository")
        state_root = info.data.get("runner_state_root")
        if info.field_name == "runner_credentials_dir" and state_root is not None:
            root, synced = value.resolve(), Path(state_root).resolve()
            if root == synced or synced in root.parents:
                raise ValueError(f"must lie outside RUNNER_STATE_ROOT ({state_root}), which is synced to the "
                                 "state store")
        return value

    @field_validator("runner_state_dir")
    @classmethod
    def _plain_dir_name(cls, value: str) -> str:
        if value and (os.sep in value or value in (".", "..")):
            raise ValueError("must be a plain directory name such as .gemini")
        return value

    @field_validator("state_store_url")
    @classmethod
    def _store_url(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return value
        scheme, sep, rest = value.partition("://")
        if scheme == "file" and sep and rest.startswith("/") and rest.strip("/"):
            return value
        if scheme == "s3" and sep and rest.split("/", 1)[0]:
            return value
        raise ValueError("must be file:///absolute/path or s3://bucket/prefix")

    @field_validator("runner_model_gateway_headers")
    @classmethod
    def _gateway_headers(cls, value: SecretStr) -> SecretStr:
        gateway_headers(value.get_secret_value())
        return value

    @field_validator("mcp_servers_json")
    @classmethod
    def _mcp_json(cls, value: str) -> str:
        try:
            parse_mcp_json(value)
        except McpConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("mcp_config_file")
    @classmethod
    def _mcp_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.exists():  # the operator passes its own path into every pod
            log.warning("MCP_CONFIG_FILE %s does not exist; no MCP servers from a file", value)
            return None
        try:
            if value is not None:
                read_mcp_file(value)
        except McpConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @property
    def model_gateway_headers(self) -> dict[str, str]:
        """``RUNNER_MODEL_GATEWAY_HEADERS``, lower-case names to values (validated at start)."""
        return gateway_headers(self.runner_model_gateway_headers.get_secret_value())

    @property
    def mcp_servers(self) -> McpConfig:
        """The runner's MCP servers (MCP_CONFIG_FILE overlaid with MCP_SERVERS_JSON, less MCP_DISABLED_SERVERS),
        validated at start."""
        config = load_mcp_config(self.mcp_servers_json, self.mcp_config_file)
        disabled = {n.strip() for n in self.mcp_disabled_servers.split(",") if n.strip()}
        if not disabled:
            return config
        return McpConfig(servers={n: s for n, s in config.servers.items() if n not in disabled})

    @property
    def resuming(self) -> bool:
        """The platform restarted a session that already ran (``IS_RESUME=true``): no first turn again."""
        return self.is_resume.strip().lower() == "true"

    @property
    def project(self) -> str:
        return self.project_name.strip() or self.agentic_session_namespace.strip()

    @property
    def keep_credentials(self) -> bool:
        """``KEEP_CREDENTIALS_PERSISTENT``: a run's connected accounts are not cleared when it ends."""
        return self.keep_credentials_persistent.strip().lower() in ("1", "true", "yes")

    @property
    def state_dir(self) -> Path:
        """``$RUNNER_STATE_ROOT/$RUNNER_STATE_DIR``: the CLI's home/config, synced to the state store."""
        name = self.runner_state_dir or DEFAULT_STATE_DIRS[self.runner_type]
        return self.runner_state_root / name

    @property
    def events_dir(self) -> Path:
        return self.runner_events_dir or Path(tempfile.gettempdir()) / f"ambient-runner-events-{os.getpid()}"

    @property
    def model_list(self) -> list[str]:
        return [m.strip() for m in self.runner_models.split(",") if m.strip()]

    def secret_values(self) -> list[str]:
        return [self.agui_token.get_secret_value()] if self.agui_token else []


def load_settings(**overrides: object) -> RunnerSettings:
    """Read the settings; a bad value raises ``SettingsError`` with one line naming the variable."""
    try:
        return RunnerSettings(**overrides)  # type: ignore[arg-type]  # field values by name, pydantic checks them
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]).upper() if first["loc"] else "settings"
        value = first.get("input")
        shown = "" if name in NOT_SHOWN else f" (got {value!r})"
        reason = first["msg"].removeprefix("Value error, ")
        raise SettingsError(f"ambient-runner: invalid {name}{shown}: {reason}") from None
