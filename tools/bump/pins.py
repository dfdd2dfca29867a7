"""Where each runner's CLI is pinned, the pins as the lock files say, and the edits that move them.

The pure functions take and return file text (tested without network or install); ``read_pins`` and
``cli_versions`` read the checkout and what is installed in it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSIONS_START = "<!-- versions: generated from the pins by `python -m tools.bump --versions-table`; " \
                 "tests/tools/test_versions.py checks it -->"
VERSIONS_END = "<!-- end of versions -->"


@dataclass(frozen=True, slots=True)
class Package:
    name: str
    registry: str  # "pypi" | "npm"
    cli: str = ""  # the CLI it carries ("" for an SDK that bundles none)


@dataclass(frozen=True, slots=True)
class Runner:
    name: str
    packages: tuple[Package, ...]  # moved together, to one version
    pytest_k: str  # selects the runner's tests by id (-k), across the suite

    @property
    def registry(self) -> str:
        return self.packages[0].registry

    @property
    def lead(self) -> Package:
        """The package whose versions the registry is asked for."""
        return self.packages[0]


RUNNERS = {
    "claude": Runner("claude", (Package("claude-agent-sdk", "pypi", "Claude Code"),), "claude"),
    "codex-sdk": Runner("codex-sdk", (Package("openai-codex", "pypi"),
                                      Package("openai-codex-cli-bin", "pypi", "Codex")), "codex"),
    "gemini-cli": Runner("gemini-cli", (Package("@google/gemini-cli", "npm", "Gemini CLI"),), "gemini"),
}
PYPI_FILES = ("pyproject.toml", "requirements.lock")
NPM_FILES = ("package.json", "package-lock.json")


def runner(name: str) -> Runner:
    aliases = {"claude-agent-sdk": "claude", "codex": "codex-sdk", "gemini": "gemini-cli"}
    try:
        return RUNNERS[aliases.get(name, name)]
    except KeyError:
        raise SystemExit(f"RUNNER={name!r}: one of {', '.join(RUNNERS)}") from None


# ----- reading the pins ------------------------------------------------------------------------------------------
def lock_pins(lock_text: str) -> dict[str, str]:
    """``name==version`` lines of a pip lock file, by normalised name."""
    pins = {}
    for line in lock_text.splitlines():
        found = re.match(r"^\s*([A-Za-z0-9._-]+)\s*==\s*([^\s;#]+)", line)
        if found:
            pins[_normal(found[1])] = found[2]
    return pins


def npm_pins(package_json_text: str) -> dict[str, str]:
    return dict(json.loads(package_json_text).get("dependencies") or {})


def read_pins(root: Path = ROOT) -> dict[str, str]:
    """Every runner package's pinned version, as the lock files say."""
    python, npm = lock_pins((root / "requirements.lock").read_text()), npm_pins((root / "package.json").read_text())
    pins = {}
    for spec in RUNNERS.values():
        for package in spec.packages:
            version = npm.get(package.name) if package.registry == "npm" else python.get(_normal(package.name))
            if version is None:
                where = "package.json" if package.registry == "npm" else "requirements.lock"
                raise ValueError(f"{package.name} is not pinned in {where}")
            pins[package.name] = version
    return pins


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ----- moving them (pure: text in, text out) ---------------------------------------------------------------------
def set_lock_pin(lock_text: str, package: str, version: str) -> str:
    """requirements.lock with ``package==version``; the package must be pinned there already."""
    pattern = re.compile(rf"^(?P<name>{_name_pattern(package)})==[^\s;#]+", re.MULTILINE | re.IGNORECASE)
    changed, count = pattern.subn(lambda m: f"{m['name']}=={version}", lock_text)
    if count != 1:
        raise ValueError(f"requirements.lock pins {package} {count} times, not once")
    return changed


def set_pyproject_pin(pyproject_text: str, package: str, version: str) -> str:
    """pyproject.toml with every ``"package==x"`` requirement at ``version`` (the runner's extra)."""
    pattern = re.compile(rf'"(?P<name>{_name_pattern(package)})==[^"]+"', re.IGNORECASE)
    changed, count = pattern.subn(lambda m: f'"{m["name"]}=={version}"', pyproject_text)
    if count == 0:
        raise ValueError(f"pyproject.toml has no exact requirement on {package}")
    return changed


def _name_pattern(package: str) -> str:
    return "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]+", package))


# ----- docs/runners.md's table -----------------------------------------------------------------------------------
def cli_versions(root: Path = ROOT) -> dict[str, str]:
    """The version of each CLI as installed here (the bundled binaries', the npm package's), by package name."""
    found: dict[str, str] = {}
    site = next((root / ".venv" / "lib").glob("python*/site-packages"), None)
    if site is not None:
        claude = site / "claude_agent_sdk" / "_bundled" / "claude.version"
        if claude.is_file():
            found["claude-agent-sdk"] = claude.read_text().split()[0]
        codex = site / "codex_cli_bin" / "codex-package.json"
        if codex.is_file():
            found["openai-codex-cli-bin"] = json.loads(codex.read_text())["version"]
    gemini = root / "node_modules" / "@google" / "gemini-cli" / "package.json"
    if gemini.is_file():
        found["@google/gemini-cli"] = json.loads(gemini.read_text())["version"]
    return found


def versions_table(pins: dict[str, str], clis: dict[str, str]) -> str:
    """The table of docs/runners.md#versions, between its markers."""
    rows = [VERSIONS_START, "| runner | package | pinned in | version | the CLI it runs |", "|---|---|---|---|---|"]
    for spec in RUNNERS.values():
        for package in spec.packages:
            files = NPM_FILES if package.registry == "npm" else PYPI_FILES
            cli = f"{package.cli} {clis.get(package.name, '?')}" if package.cli else "(the SDK: no CLI of its own)"
            rows.append(f"| `{spec.name}` | `{package.name}` ({package.registry}) | "
                        f"{', '.join(f'`{f}`' for f in files)} | {pins[package.name]} | {cli} |")
    return "\n".join([*rows, VERSIONS_END])


def with_versions_table(doc_text: str, table: str) -> str:
    """docs/runners.md with its versions table replaced by ``table``."""
    start, end = doc_text.find(VERSIONS_START), doc_text.find(VERSIONS_END)
    if start < 0 or end < start:
        raise ValueError("docs/runners.md has no versions table markers")
    return doc_text[:start] + table + doc_text[end + len(VERSIONS_END):]


def documented_table(doc_text: str) -> str:
    start, end = doc_text.find(VERSIONS_START), doc_text.find(VERSIONS_END)
    return doc_text[start:end + len(VERSIONS_END)] if 0 <= start < end else ""
