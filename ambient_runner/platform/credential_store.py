"""Handing the person's connected accounts to the agent's tools, current at every use.

The agent CLIs are started once (Gemini's ``gemini --acp``, Codex's app-server, Claude's CLI per thread) and their
environment is fixed then, so nothing here is a token in that environment. The CLI gets, at spawn, *paths* into a
runner-owned directory (``RUNNER_CREDENTIALS_DIR``: mode 0700, outside the workspace and the synced state dir) whose
files are rewritten before every run and read by the tools when they run:

* git over https: ``credential.helper`` (through ``GIT_CONFIG_COUNT``, so no repository or home config is needed)
  is a script that reads the current token at each call: GitHub's for GitHub hosts (``github.com``, ``*.github.com``,
  ``*.ghe.com``, ``RUNNER_GITHUB_HOSTS``), GitLab's for ``gitlab.com``, ``*.gitlab.com`` and the account's own
  instance, nothing for any other host; plain http only to loopback;
* the git identity (``user.name``, ``user.email`` of the GitHub, else GitLab account): an ``include.path`` file;
* ``gh`` and ``glab``: ``GH_CONFIG_DIR/hosts.yml`` and ``GLAB_CONFIG_DIR/config.yml``;
* ``kubectl``: ``KUBECONFIG``; Gerrit: ``GERRIT_CONFIG_PATH`` (and its ``.gitcookies``); Google Workspace:
  ``GOOGLE_MCP_CREDENTIALS_DIR``;
* variables (``GITHUB_TOKEN``, ``GITLAB_TOKEN``, ``JIRA_URL``/``JIRA_EMAIL``/``JIRA_API_TOKEN``,
  ``CODERABBIT_API_KEY``, ``USER_GOOGLE_EMAIL``, ``MCP_<SERVER>_<FIELD>``): ``exports.sh``, which every
  non-interactive bash the tools start sources first (``BASH_ENV``; Claude Code's login shells through
  ``CLAUDE_ENV_FILE``, which it runs before each Bash command): a value set, or ``unset`` when it is gone.

``deliver`` replaces everything at once (a provider that is absent from a run's fetch is removed, so one person's
account never stays for the next sender); ``clear`` removes every account; ``remove``, at the runner's stop, the
folder too. Files are written whole and renamed into place.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from ambient_runner.platform.accounts import (
    ApiKeyAccount,
    GitAccount,
    GoogleAccount,
    JiraAccount,
    McpAccount,
    TokenAccount,
    gerrit_instances,
)
from ambient_runner.platform.credential_scripts import bash_env_script, claude_env_script, helper_script

DEFAULT_NAME, DEFAULT_EMAIL = "Ambient Code Bot", "bot@ambient-code.local"
GITHUB_HOST_PATTERNS = ("github.com", "*.github.com", "*.ghe.com")
HOST_PATTERN = re.compile(r"^[A-Za-z0-9*][A-Za-z0-9.*:-]*$")
SUBDIRECTORIES = ("github", "gitlab", "gh", "glab", "kube", "gerrit", "google")
TOKEN_FILES = ("exports.sh", "github/token", "gitlab/token", "gh/hosts.yml", "glab/config.yml", "kube/config",
               "gerrit/gerrit_config.json", "gitconfig")
EXPORTED = ("GITHUB_TOKEN", "GITLAB_TOKEN", "JIRA_URL", "JIRA_EMAIL", "JIRA_API_TOKEN", "CODERABBIT_API_KEY",
            "USER_GOOGLE_EMAIL", "GOOGLE_APPLICATION_CREDENTIALS")

def account_variable(name: str) -> bool:
    """A variable the connected accounts set in the tools' shells (an MCP server may refer to one)."""
    return name in EXPORTED or (name.startswith("MCP_") and name.count("_") >= 2 and name != "MCP_CONFIG_FILE")


def _host_of(url: str, default: str) -> str:
    """The host (and port) ``url`` names, when it is one a credential may be written for; else ``default`` (a URL
    that does not parse, such as an unclosed ``[`` of an IPv6 host, names none)."""
    try:
        host = urlsplit(url if "://" in url else f"https://{url}").netloc if url.strip() else ""
    except ValueError:
        return default
    host = host.rsplit("@", 1)[-1]
    return host if HOST_PATTERN.match(host or "") else default


class CredentialStore:
    def __init__(self, root: Path, github_hosts: Iterable[str] = (), oauth_client: tuple[str, str] = ("", "")) -> None:
        """``oauth_client``: Google's (``GOOGLE_OAUTH_CLIENT_ID``, ``GOOGLE_OAUTH_CLIENT_SECRET``), written into the
        person's Google credentials for the MCP server to refresh them with."""
        self.root = root
        self.oauth_client = oauth_client
        extra = [h.strip() for h in github_hosts if h.strip()]
        self.github_hosts = tuple(dict.fromkeys([*GITHUB_HOST_PATTERNS, *(h for h in extra if HOST_PATTERN.match(h))]))
        self._exported: dict[str, str] = {}
        self._names: set[str] = set(EXPORTED)

    # ----- paths ---------------------------------------------------------------------------------------------
    @property
    def helper(self) -> Path:
        return self.root / "git-credential-ambient"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kube" / "config"

    @property
    def gerrit_config(self) -> Path:
        return self.root / "gerrit" / "gerrit_config.json"

    def environment(self) -> dict[str, str]:
        """What the CLI gets at spawn: paths only, never a token."""
        return {"GIT_CONFIG_COUNT": "2",
                "GIT_CONFIG_KEY_0": "credential.helper", "GIT_CONFIG_VALUE_0": str(self.helper),
                "GIT_CONFIG_KEY_1": "include.path", "GIT_CONFIG_VALUE_1": str(self.root / "gitconfig"),
                "GH_CONFIG_DIR": str(self.root / "gh"), "GLAB_CONFIG_DIR": str(self.root / "glab"),
                "KUBECONFIG": str(self.kubeconfig), "GERRIT_CONFIG_PATH": str(self.gerrit_config),
                "GOOGLE_MCP_CREDENTIALS_DIR": str(self.root / "google"), "BASH_ENV": str(self.root / "bash_env"),
                "CLAUDE_ENV_FILE": str(self.root / "claude_env")}

    def exported(self) -> dict[str, str]:
        """The variables of the current delivery (for an MCP server that refers to one, at the CLI's spawn)."""
        return dict(self._exported)

    # ----- writing -------------------------------------------------------------------------------------------
    def install(self) -> None:
        """The directory (0700, ours, made fresh: whatever was at its path is removed first) and the scripts; no
        account until ``deliver``."""
        if self.root.is_symlink() or self.root.is_file():
            self.root.unlink()
        elif self.root.exists():
            shutil.rmtree(self.root)
        self.root.parent.mkdir(parents=True, exist_ok=True)
        self.root.mkdir(mode=0o700)  # FileExistsError: something made it meanwhile, and it is not ours
        if self.root.is_symlink() or self.root.stat().st_uid != os.getuid():
            raise RuntimeError(f"{self.root} is not a directory of this runner's user")
        self.root.chmod(0o700)
        self.clear()

    def _fresh_layout(self) -> None:
        """Every folder a plain folder of ours and every script as the runner wrote it, before each delivery: what
        a tool of an earlier run changed there (a link planted in place of a folder, a rewritten helper) is gone
        before the next sender's accounts are written. The folder itself too: a link or a file in its place is
        removed and the folder made again, so no account is written where a tool pointed it."""
        if self.root.is_symlink() or not self.root.is_dir():
            _remove(self.root)
            self.root.mkdir(mode=0o700)
        for sub in SUBDIRECTORIES:
            folder = self.root / sub
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                folder.unlink()
            folder.mkdir(mode=0o700, exist_ok=True)
        self._write(self.helper, helper_script(self.root, self.github_hosts), mode=0o700)
        self._write(self.root / "bash_env", bash_env_script(self.helper, self.root / "exports.sh"))
        self._write(self.root / "claude_env", claude_env_script(self.root / "bash_env"))

    def deliver(self, values: Mapping[str, object]) -> None:
        """Replace every account with those of ``values`` (kind -> the backend's answer)."""
        self._fresh_layout()
        exported: dict[str, str] = {}
        github = GitAccount.of(values.get("github")) or GitAccount()
        gitlab = GitAccount.of(values.get("gitlab")) or GitAccount()
        self._github(github, exported)
        self._gitlab(gitlab, exported)
        self._identity(github, gitlab)
        self._jira(JiraAccount.of(values.get("jira")), exported)
        self._google(GoogleAccount.of(values.get("google")), exported)
        coderabbit = ApiKeyAccount.of(values.get("coderabbit"))
        if coderabbit is not None and coderabbit.api_key:
            exported["CODERABBIT_API_KEY"] = coderabbit.api_key
        self._gerrit(values.get("gerrit"))
        kube = TokenAccount.of(values.get("kubeconfig"))
        self._put(self.kubeconfig, kube.token if kube is not None and kube.token else None)
        for kind, data in values.items():
            mcp = McpAccount.of(data) if kind.startswith("mcp/") else None
            if mcp is not None:
                server = re.sub(r"[^A-Z0-9]", "_", kind[4:].upper())
                for name, value in mcp.fields.items():
                    exported[f"MCP_{server}_{re.sub(r'[^A-Z0-9]', '_', str(name).upper())}"] = str(value)
        self._export(exported)

    def clear(self) -> None:
        """No account left: every token file removed first (one by one, whatever is in the way), then the rest."""
        self._remove_tokens()
        self.deliver({})

    def remove(self) -> None:
        """The store gone (the runner stops): the token files first, as ``clear`` removes them, then the folder."""
        self._remove_tokens()
        _remove(self.root)

    def _remove_tokens(self) -> None:
        if self.root.is_symlink():  # a link planted in place of the folder: nothing of ours is where it points
            return
        for path in TOKEN_FILES:
            _remove(self.root / path)

    def _github(self, account: GitAccount, exported: dict[str, str]) -> None:
        token = account.token
        self._put(self.root / "github" / "token", token or None)
        hosts = None
        if token:
            exported["GITHUB_TOKEN"] = token
            entry = {"oauth_token": token, "git_protocol": "https"}
            if account.user_name:
                entry["user"] = account.user_name
            hosts = _yaml({"github.com": entry})
        self._put(self.root / "gh" / "hosts.yml", hosts)

    def _gitlab(self, account: GitAccount, exported: dict[str, str]) -> None:
        token = account.token
        host = _host_of(account.instance_url, "gitlab.com")
        self._put(self.root / "gitlab" / "token", token or None)
        self._put(self.root / "gitlab" / "host", host if token else None)
        config = None
        if token:
            exported["GITLAB_TOKEN"] = token
            config = _yaml({"hosts": {host: {"token": token, "api_protocol": "https", "git_protocol": "https"}}})
        self._put(self.root / "glab" / "config.yml", config)

    def _identity(self, github: GitAccount, gitlab: GitAccount) -> None:
        def pick(field: Callable[[GitAccount], str], default: str) -> str:
            for account in (github, gitlab):  # GitHub's account first, as the reference does
                value = field(account).strip() if account.token else ""
                if value and value.isprintable():  # a control character would break every git command
                    return value
            return default

        name, email = pick(lambda a: a.user_name, DEFAULT_NAME), pick(lambda a: a.email, DEFAULT_EMAIL)
        self._put(self.root / "gitconfig", f"[user]\n\tname = {_quoted(name)}\n\temail = {_quoted(email)}\n")

    def _jira(self, account: JiraAccount | None, exported: dict[str, str]) -> None:
        if account is None:
            return
        token = account.the_token
        if token:
            exported.update({"JIRA_URL": account.url, "JIRA_EMAIL": account.email, "JIRA_API_TOKEN": token})

    def _google(self, account: GoogleAccount | None, exported: dict[str, str]) -> None:
        directory = self.root / "google"
        for old in directory.glob("*.json"):
            old.unlink(missing_ok=True)
        if account is None:
            return
        email = account.email
        usable_email = email if email and email != "user@example.com" and "/" not in email else ""
        if account.access_token:
            expiry = account.expires_at.removesuffix("Z")
            creds = {"token": account.access_token, "refresh_token": account.refresh_token,
                     "token_uri": "https://oauth2.googleapis.com/token",
                     "client_id": self.oauth_client[0], "client_secret": self.oauth_client[1],
                     "scopes": account.scopes, "expiry": expiry}
            self._put(directory / f"{usable_email or 'credentials'}.json", json.dumps(creds, indent=2))
        elif account.token:
            key = directory / "service-account.json"
            self._put(key, account.token)
            exported["GOOGLE_APPLICATION_CREDENTIALS"] = str(key)
        if usable_email:
            exported["USER_GOOGLE_EMAIL"] = usable_email

    def _gerrit(self, data: object) -> None:
        cookies_file = self.root / "gerrit" / ".gitcookies"
        hosts, cookies = [], []
        for instance in gerrit_instances(data):
            entry: dict[str, object] = {"name": instance.instance_name, "external_url": instance.url}
            if instance.auth_method == "http_basic":
                entry["authentication"] = {"type": "http_basic", "username": instance.username,
                                           "auth_token": instance.http_token}
            elif instance.auth_method == "git_cookies":
                entry["authentication"] = {"type": "git_cookies", "gitcookies_path": str(cookies_file)}
                if instance.gitcookies_content:
                    cookies.append(instance.gitcookies_content.strip())
            hosts.append(entry)
        self._put(cookies_file, "\n".join(cookies) + "\n" if cookies else None)
        config = {"gerrit_hosts": hosts, "default_gerrit_base_url": hosts[0]["external_url"]} if hosts else None
        self._put(self.gerrit_config, json.dumps(config, indent=2) if config else None)

    def _export(self, exported: dict[str, str]) -> None:
        self._names |= set(exported)
        lines = [f"export {name}={shlex.quote(value)}" for name, value in sorted(exported.items())]
        lines += [f"unset {name}" for name in sorted(self._names - set(exported))]
        self._write(self.root / "exports.sh", "\n".join(lines) + "\n")
        self._exported = exported

    def _put(self, path: Path, text: str | None) -> None:
        if text is None:
            _remove(path)
        else:
            self._write(path, text)

    @staticmethod
    def _write(path: Path, text: str, mode: int = 0o600) -> None:
        """Whole, or not at all: a tool reading it meanwhile sees the old or the new file."""
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        _remove(temporary)
        if path.is_dir() and not path.is_symlink():  # a folder planted where a file goes
            shutil.rmtree(path)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(text)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise


def _remove(path: Path) -> None:
    """Whatever is at ``path`` (a link itself, never what it names; a folder with all it holds)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _yaml(data: Mapping[str, object], indent: int = 0) -> str:
    """A small YAML mapping (strings quoted as JSON, which YAML reads as double-quoted scalars)."""
    lines = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            lines.append(f"{' ' * indent}{key}:")
            lines.append(_yaml(value, indent + 4).rstrip("\n"))
        else:
            lines.append(f"{' ' * indent}{key}: {json.dumps(str(value))}")
    return "\n".join(lines) + "\n"


def _quoted(value: str) -> str:
    """A git config value in double quotes."""
    return json.dumps(value, ensure_ascii=False)
