"""docs/runners.md#versions is what the lock files pin and what is installed from them, and a note in the code
about a CLI's behaviour names no version of its own: it means the table's."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from tools.bump import pins

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "runners.md"
# "Claude Code 2.1.332", "codex 0.163", "gemini-cli 0.61", "measured with 2.1.332", "openai-codex-cli-bin 0.163.0"
VERSION_NOTE = re.compile(
    r"(?:\b(?:claude[ -]code|claude-agent-sdk|codex(?:-cli)?|openai-codex(?:-cli-bin)?|gemini[ -]cli)\s+v?"
    r"|\bmeasured (?:with|on) v?)\d+\.\d+", re.IGNORECASE)
CODE = ("ambient_runner", "ag_ui_cli_common", "ag_ui_gemini_cli", "ag_ui_codex_sdk", "ag_ui_claude", "tests",
        "deploy", "tools", "main.py")


def test_the_versions_table_is_the_pins() -> None:
    expected = pins.versions_table(pins.read_pins(ROOT), pins.cli_versions(ROOT))
    assert pins.documented_table(DOC.read_text()) == expected, (
        "docs/runners.md#versions differs from the pins: rewrite it with .venv/bin/python -m tools.bump "
        "--versions-table")


def test_the_pyproject_extras_and_the_lock_pin_the_same_versions() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    for name, version in pins.read_pins(ROOT).items():
        if name.startswith("@"):
            continue
        assert f'"{name}=={version}"' in pyproject, f"pyproject.toml does not pin {name}=={version} as the lock does"


def test_what_is_installed_is_what_is_pinned() -> None:
    pinned = pins.read_pins(ROOT)
    installed = {name: metadata.version(name) for name in pinned if not name.startswith("@")}
    installed.update({name: v for name, v in pins.cli_versions(ROOT).items() if name.startswith("@")})
    assert installed == pinned, "reinstall from the lock files (make install)"


def test_no_version_note_in_the_code_names_a_cli_version_of_its_own() -> None:
    found = []
    for top in CODE:
        for path in sorted((ROOT / top).rglob("*.py")) if (ROOT / top).is_dir() else [ROOT / top]:
            if path.parent == Path(__file__).parent:  # the bump's own tests: versions are their data
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if VERSION_NOTE.search(line) and path != Path(__file__):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == [], ("name the pinned version through docs/runners.md#versions instead:\n" + "\n".join(found))
