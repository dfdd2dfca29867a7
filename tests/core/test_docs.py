"""The documentation stays a newcomer's size and portable: the README at most 12 KiB (new text goes to docs pages),
and no file of README, docs/ or bench/ (sources, notes and the committed results ``make bench`` writes) holds an
absolute path of the machine that made it. Paths the docs describe in the container (``/workspace``, ``/app``,
``/var/run/secrets/...``, ``/tmp`` itself) are not the machine's."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_LIMIT = 12 * 1024
# An absolute path that names a machine's own folders: a work tree or home (/work/..., /root/..., /home/<user>/...,
# /Users/<user>), a temporary folder a run made (pytest's /tmp/pytest-of-<user>, mkdtemp's /tmp/tmp<8 random>, a
# prefix's /tmp/<prefix>-<8 random>), macOS's temporary folders. /tmp itself (the container's) and a name a
# document chooses for an example command (/tmp/old.json) are not one. It starts a path: not inside a URL or a longer
# path (github.com/work/... is not one), except after file://.
RANDOM_PART = r"(?=[a-z0-9_]*\d)(?=[a-z0-9_]*[a-z])[a-z0-9_]{8}\b"
MACHINE_PATH = re.compile(r"(?:(?<![\w.~$/\\-])|(?<=file://))"
                          r"(/(?:work|root)/[^\s`'\")\]]+|/(?:home|Users)/[\w.-]+|/(?:private/)?var/folders/"
                          rf"|/tmp/(?:pytest-of-[\w.-]+|tmp{RANDOM_PART}|[\w.+-]+[-_]{RANDOM_PART}))")


def machine_paths(text: str) -> list[str]:
    return [m.group(1) for m in MACHINE_PATH.finditer(text)]


def checked_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in ("docs", "bench"):
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return files


def test_the_readme_is_at_most_12_kib():
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} bytes (at most {README_LIMIT}): move text to a docs page"
    quick_start = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "make run " in quick_start and "`make test`" in quick_start  # its two commands stay


def test_no_machine_path_in_readme_docs_or_bench():
    found = []
    for path in checked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # the plots
            continue
        for number, line in enumerate(text.splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{number}: {hit}" for hit in machine_paths(line)]
    assert found == []
    assert {p.relative_to(ROOT).as_posix() for p in checked_files()} >= {
        "README.md", "docs/benchmarks.md", "docs/benchmarks/results.json", "bench/NOTES.md", "bench/bare.py",
        "bench/long_thread.py", "bench/compare.py"}


@pytest.mark.parametrize("text", [
    "/work/main/bench/run.py", "summed: /work/shared/research/platform-backend-contract.md §2",
    '"reference": "/work/ref/components/runners/ambient-runner"', "python bench/compare.py --before /work/wt-before",
    "/root/.cache/ambient-runner", "`/home/alice/src/x`", "(/Users/bob)", "/tmp/pytest-of-root/pytest-3/x",
    "TMPDIR=/tmp/tmpa1b2c3d4", "/tmp/runner-harness-k2j3h4x9/workspace", "file:///work/main/docs",
    "/private/var/folders/xy/T/", "/var/folders/xy/T/"])
def test_the_rule_finds_a_machine_path(text):
    assert machine_paths(text), text


@pytest.mark.parametrize("text", [
    "`WORKSPACE_PATH` | `/workspace`", "clones into `/workspace/repos/<name>`", "The state dir is `/app/<stateDir>`",
    "/var/run/secrets/kubernetes.io/serviceaccount/token", "leaves nothing in `/tmp`.", "emptyDirs for `/workspace`, "
    "the state root and `/tmp`;", "`~/.cache/ambient-runner/local-8001/workspace`", "https://github.com/work/x",
    "$HOME/work/x", "`$XDG_CACHE_HOME/ambient-runner`", "components/runners/ambient-runner", "../main-before",
    "bench/work/x", "http://127.0.0.1:8001/run", "`/health`, `/ready`", "--out /tmp/old.json",
    "npm install --prefix /tmp/codex171 @openai/codex@0.171.0", "/tmp/codex171/node_modules/.bin/codex"])
def test_the_rule_leaves_documented_paths_alone(text):
    assert machine_paths(text) == [], text


def test_bench_writes_a_reference_folder_as_a_path_inside_its_repository(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_common", ROOT / "bench" / "common.py")
    assert spec is not None and spec.loader is not None
    common = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_common", common)
    spec.loader.exec_module(common)
    repository = tmp_path / "platform"
    folder = repository / "components" / "runners" / "ambient-runner"
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    assert common.shown_path(folder) == "components/runners/ambient-runner"
    assert common.shown_path(ROOT / "bench" / "NOTES.md") == "bench/NOTES.md"
    alone = tmp_path / "elsewhere" / "reference"
    alone.mkdir(parents=True)
    assert common.shown_path(alone) == "reference"
    assert common.shown_path(repository) == "platform"
