"""The codex-sdk runner's Codex: its ``config.toml`` (``bridges.codex_config``, shared with codex-acp's) and the
bundled binary."""

from __future__ import annotations

from pathlib import Path

from ambient_runner.bridges.codex_config import (
    DEFAULT_MODEL,
    DISABLED_FEATURES,
    OPENAI_API_BASE,
    PROVIDER_ID,
    SANDBOX_MODE,
    CodexConfigFile,
)

__all__ = ["DEFAULT_MODEL", "DISABLED_FEATURES", "OPENAI_API_BASE", "PROVIDER_ID", "SANDBOX_MODE", "CodexConfigFile",
           "bundled_codex"]


def bundled_codex() -> tuple[Path | None, Path | None]:
    """The codex binary of ``openai-codex-cli-bin`` and its helper PATH dir (rg), or ``None``."""
    try:
        from codex_cli_bin import bundled_codex_path, bundled_path_dir
    except ImportError:
        return None, None
    try:
        return bundled_codex_path(), bundled_path_dir()
    except FileNotFoundError:
        return None, None
