"""Where the Gemini CLI lives, where its home is, its settings.json, and the command line of one turn.

The CLI keeps everything under ``$GEMINI_CLI_HOME/.gemini`` (settings.json, projects.json, tmp/<project>/chats
with the sessions ``--resume`` needs). ``GEMINI_CLI_HOME`` is chosen so that this directory *is* the runner's
state dir (``$RUNNER_STATE_ROOT/.gemini``): never the machine user's home, never inside the workspace.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ambient_runner.bridges.gemini_cli.auth import GeminiAuth
from ambient_runner.process.environment import BASE_VARIABLES

DEFAULT_MODEL = "gemini-2.5-flash"
DEFAULT_MODELS = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite")
DEFAULT_MAX_ATTEMPTS = 3
CLI_PATH_VAR = "GEMINI_CLI_PATH"
REPO_ROOT = Path(__file__).resolve().parents[3]
GEMINI_DIR_NAME = ".gemini"


@dataclass(frozen=True)
class GeminiHome:
    """The CLI's home (``GEMINI_CLI_HOME`` and ``HOME``), its ``.gemini`` dir and its temp dir."""

    cli_home: Path
    gemini_dir: Path
    tmp_dir: Path

    @classmethod
    def for_state_dir(cls, state_dir: Path) -> GeminiHome:
        state_dir = Path(state_dir).absolute()
        if state_dir.name == GEMINI_DIR_NAME:  # $RUNNER_STATE_ROOT/.gemini: the CLI's home is the state root
            cli_home, gemini_dir = state_dir.parent, state_dir
        else:  # another name: the home is the state dir itself, the files go to <state dir>/.gemini
            cli_home, gemini_dir = state_dir, state_dir / GEMINI_DIR_NAME
        # Error reports and other temp files: next to the state dir (not synced, not the shared /tmp).
        return cls(cli_home, gemini_dir, cli_home / f"{state_dir.name}-tmp")

    @property
    def settings_path(self) -> Path:
        return self.gemini_dir / "settings.json"

    def prepare(self) -> None:
        for directory in (self.gemini_dir, self.tmp_dir):
            directory.mkdir(parents=True, exist_ok=True)


def max_attempts(raw: str) -> int:
    """``GEMINI_CLI_MAX_ATTEMPTS`` (1-10; the default when unset or not a number)."""
    raw = raw.strip()
    if not raw:
        return DEFAULT_MAX_ATTEMPTS
    try:
        return min(10, max(1, int(raw)))
    except ValueError:
        return DEFAULT_MAX_ATTEMPTS


def runner_settings(selected_type: str, attempts: int) -> dict[str, Any]:
    """The settings the runner enforces: no telemetry, no update checks, bounded retries, no IDE, and no session
    clean-up by the CLI (it deletes threads idle for 30 days, and a loaded ACP session at its next start)."""
    return {
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False, "maxAttempts": attempts,
                    "sessionRetention": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False},
        "security": {"auth": {"selectedType": selected_type}},
    }


def _merge(base: dict[str, Any], enforced: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in enforced.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def write_settings(home: GeminiHome, auth: GeminiAuth, attempts: int,
                   mcp_servers: Mapping[str, Any] | None = None) -> None:
    """Write settings.json (0600), keeping keys others put there and enforcing ours. ``mcp_servers`` (the
    runner's MCP configuration, ``${VAR}`` references kept: the CLI expands them) replaces ``mcpServers``."""
    try:
        existing = json.loads(home.settings_path.read_text())
        if not isinstance(existing, dict):
            existing = {}
    except (OSError, ValueError):
        existing = {}
    merged = _merge(existing, runner_settings(auth.selected_type, attempts))
    if mcp_servers:
        merged["mcpServers"] = dict(mcp_servers)
    home.gemini_dir.mkdir(parents=True, exist_ok=True)
    tmp = home.settings_path.with_name(f".settings.json.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(merged, out, indent=2)
    os.replace(tmp, home.settings_path)


def configured_servers(home: GeminiHome) -> set[str]:
    """The names of the MCP servers in the CLI's own settings.json (the state dir's: the runner's and its user's)."""
    try:
        servers = json.loads(home.settings_path.read_text()).get("mcpServers")
    except (OSError, ValueError, AttributeError):
        return set()
    return {name for name in servers if isinstance(name, str)} if isinstance(servers, dict) else set()


def find_cli(configured: str = "") -> str | None:
    """``configured`` (``GEMINI_CLI_PATH``), else the repo's ``node_modules/.bin/gemini``, else ``gemini`` on PATH."""
    configured = configured.strip()
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    bundled = REPO_ROOT / "node_modules" / ".bin" / "gemini"
    if os.access(bundled, os.X_OK):
        return str(bundled)
    return shutil.which("gemini")


TRANSPORT_VAR = "GEMINI_TRANSPORT"
TRANSPORTS = ("acp", "stream-json")


def transport(raw: str) -> str:
    """``GEMINI_TRANSPORT``: ``acp`` (default: one live ``gemini --acp``) or ``stream-json`` (a process a turn)."""
    return raw.strip().lower() or TRANSPORTS[0]


# No MCP server has this name: the allow-list of a runner without MCP servers (an empty one would allow all).
NO_MCP_SERVER = "ambient-runner-no-mcp-server"


def mcp_allowlist(names: Iterable[str]) -> list[str]:
    """Only the runner's own MCP servers start: a ``.gemini/settings.json`` in the workspace or a workflow's folder
    may declare others (the trust rule, docs/workflows.md); the flag ranks above every settings file."""
    return ["--allowed-mcp-server-names", ",".join(sorted(names)) or NO_MCP_SERVER]


def acp_argv(cli: str, model: str, attachments_dir: Path, workspace: Path | None = None,
             mcp_names: Iterable[str] = ()) -> list[str]:
    """The live CLI: ACP on stdio; each session's approval mode is set per turn (``session/set_mode``). Its file
    tools reach the attachments and the workspace root (a session may work in a workflow's folder inside it)."""
    folders = ",".join(str(p) for p in (attachments_dir, workspace) if p is not None)
    return [cli, "--acp", "--model", model, "--approval-mode", "yolo", "--include-directories", folders,
            *mcp_allowlist(mcp_names)]


def turn_argv(cli: str, model: str, resume_session: str | None, plan: bool = False,
              attachments_dir: Path | None = None, ask: bool = False,
              also: tuple[Path, ...] = (), mcp_names: Iterable[str] = ()) -> list[str]:
    """One headless turn. The prompt goes through stdin (``-p ""`` makes the run headless and the CLI uses
    stdin as the prompt), so there is no argv size limit, no quoting and no leading-dash problem.
    ``plan``: ``--approval-mode plan`` (read-only tools only), else ``yolo`` (nobody can confirm a call), or with
    ``ask`` ``default``: headless, a call that needs a confirmation is then refused, never run unasked.
    ``attachments_dir``: the run's attachments, outside the workspace, which the CLI reads only when included;
    ``also``: more folders its file tools reach (the workspace root, when the turn works in a workflow's folder)."""
    approval = "plan" if plan else "default" if ask else "yolo"
    argv = [cli, "--prompt=", "--model", model, "--output-format", "stream-json", "--approval-mode", approval,
            *mcp_allowlist(mcp_names)]
    if resume_session:
        argv += ["--resume", resume_session]
    folders = [str(p) for p in (attachments_dir, *also) if p is not None]
    if folders:
        argv += ["--include-directories", ",".join(folders)]
    return argv


def prompt_with_files(prompt: str, files: list[Path]) -> str:
    """The prompt with an ``@path`` reference per file: the CLI sends each one's bytes with the prompt (images and
    PDFs as inline data). Spaces in a path are escaped as the CLI's ``@`` syntax wants."""
    if not files:
        return prompt
    references = " ".join("@" + str(path).replace(" ", "\\ ") for path in files)
    return f"{prompt}\n\nAttached: {references}"


# Variables a ``.env`` in the workspace (or ``.gemini/.env``, or any directory above it) could set to move the
# model traffic, swap the credential or point at other settings. The CLI loads a ``.env`` only into variables
# that are not set, so each is set here, empty when the runner does not use it (empty reads as unset in the CLI).
PINNED_VARIABLES = (
    "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GEMINI_CLI_USE_COMPUTE_ADC", "CLOUD_SHELL",
    "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_PROJECT_ID", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
    "GEMINI_API_KEY_AUTH_MECHANISM", "GEMINI_CLI_CUSTOM_HEADERS", "GOOGLE_GENAI_API_VERSION",
    "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
    "GEMINI_MODEL", "GEMINI_SYSTEM_MD", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_EXTRA_CA_CERTS", "NODE_OPTIONS",
    "GEMINI_TELEMETRY_ENABLED", "GEMINI_TELEMETRY_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
)
# Settings a trusted workspace's ``.gemini/settings.json`` must not change: only the system settings layer ranks
# above the workspace, and the CLI honours that file only when it and its directories are root's and not writable
# by others (baked into the image; written by a runner that runs as root).
SYSTEM_SETTINGS_PATH = Path("/etc/ambient-runner/gemini-system-settings.json")
AUTH_TYPE_VAR = "AMBIENT_GEMINI_AUTH_TYPE"
SYSTEM_SETTINGS: dict[str, Any] = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "ide": {"enabled": False},
    "hooksConfig": {"enabled": False},
    "tools": {"discoveryCommand": "", "callCommand": ""},
    "advanced": {"ignoreLocalEnv": True},
    "security": {"auth": {"selectedType": f"${{{AUTH_TYPE_VAR}}}"}},
}


def ensure_system_settings(path: Path = SYSTEM_SETTINGS_PATH) -> Path | None:
    """The system settings file the CLI will honour: written when the runner can (root), else the image's.
    None when neither exists (then a workspace's settings.json can change the CLI's settings; logged)."""
    if os.geteuid() == 0:
        try:
            path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(SYSTEM_SETTINGS, indent=2))
            tmp.chmod(0o644)
            os.replace(tmp, path)
        except OSError:
            pass
    return path if path.is_file() else None


def cli_env(home: GeminiHome, auth: GeminiAuth, system_settings: Path | None = None) -> dict[str, str]:
    """The variables the bridge sets for the CLI (on top of the allowlisted base environment)."""
    return {
        # The runner's own proxy and CA settings (deployment egress) are kept; everything else is pinned empty.
        **{name: os.environ.get(name, "") if name in BASE_VARIABLES else "" for name in PINNED_VARIABLES},
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system_settings or "/nonexistent/gemini-system-settings.json"),
        AUTH_TYPE_VAR: auth.selected_type,
        "GEMINI_CLI_HOME": str(home.cli_home),
        "HOME": str(home.cli_home),
        "TMPDIR": str(home.tmp_dir),
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_NO_RELAUNCH": "1",
        "NO_COLOR": "1",
        **auth.env,
    }
