"""``make bump RUNNER=<runner> [VERSION=x]``: take a CLI release in one command.

    .venv/bin/python -m tools.bump claude [0.2.190]       # the newest the registry serves when no version is given
    .venv/bin/python -m tools.bump --versions-table       # rewrite docs/runners.md#versions from the pins
    .venv/bin/python -m tools.bump --diff codex-sdk BEFORE.json AFTER.json   # two snapshots' protocol diff

The steps: a snapshot of the installed version (``tools.bump.snapshot``); the pins moved in the lock files
(``pyproject.toml`` and ``requirements.lock``, or ``npm install --save-exact``); the runner's package reinstalled
from them; its fixtures re-recorded (``tests/fixtures/record_<cli>.py``); a snapshot of the new version and the
protocol diff of the two; docs/runners.md#versions rewritten; ``make lint``, the runner's tests and every real-CLI
test of the runner across the suite. The last line is ``safe`` (everything passed, the diff has only additions the
runner ignores) or ``not safe: <why>``. Nothing is committed: the edits are left for review.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.bump import pins
from tools.bump.diff import diff_snapshots, report
from tools.bump.shapes import verdict

ROOT = pins.ROOT
PY = str(ROOT / ".venv" / "bin" / "python")
RECORDERS = {"claude": ["tests/fixtures/record_claude.py"], "codex-sdk": ["tests/fixtures/record_codex.py"],
             "gemini-cli": ["tests/fixtures/record_gemini.py"]}
TEST_DIRS = {"claude": "tests/claude", "codex-sdk": "tests/codex", "gemini-cli": "tests/gemini"}
EXTRAS = {"claude": "claude", "codex-sdk": "codex-sdk"}


def say(text: str) -> None:
    print(text, flush=True)


def run(argv: list[str], *, what: str, failures: list[str], timeout: float = 3600) -> bool:
    """One step's command, its output passed through; a failure is noted for the verdict."""
    say(f"$ {' '.join(argv)}")
    try:
        done = subprocess.run(argv, cwd=ROOT, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        failures.append(f"{what} ({exc})")
        return False
    if done.returncode != 0:
        failures.append(f"{what} failed (exit {done.returncode})")
        return False
    return True


# ----- the registry --------------------------------------------------------------------------------------------
def newest(spec: pins.Runner) -> str:
    """The newest version the configured registry serves of the runner's lead package."""
    package = spec.lead
    if package.registry == "npm":
        out = subprocess.run(["npm", "view", package.name, "version"], capture_output=True, text=True, check=True,
                             timeout=120).stdout
        return out.strip().splitlines()[-1]
    out = subprocess.run([PY, "-m", "pip", "index", "versions", package.name, "--disable-pip-version-check"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return newest_from_pip_index(out, package.name)


def newest_from_pip_index(output: str, name: str) -> str:
    """``pip index versions`` prints ``name (x.y.z)`` first."""
    found = re.search(rf"^{re.escape(name)} \(([^)]+)\)", output, re.MULTILINE | re.IGNORECASE)
    if not found:
        raise SystemExit(f"pip index versions {name}: no version in its answer:\n{output}")
    return found[1]


# ----- the pins ------------------------------------------------------------------------------------------------
def move_pins(spec: pins.Runner, version: str, failures: list[str]) -> bool:
    """Edit the lock files (and, for npm, install) to ``version``."""
    if spec.registry == "npm":
        return run(["npm", "install", "--save-exact", "--no-audit", "--no-fund", "--loglevel=error",
                    f"{spec.lead.name}@{version}"], what=f"npm install {spec.lead.name}@{version}", failures=failures)
    lock, pyproject = ROOT / "requirements.lock", ROOT / "pyproject.toml"
    lock_text, pyproject_text = lock.read_text(), pyproject.read_text()
    for package in spec.packages:
        lock_text = pins.set_lock_pin(lock_text, package.name, version)
        pyproject_text = pins.set_pyproject_pin(pyproject_text, package.name, version)
    lock.write_text(lock_text)
    pyproject.write_text(pyproject_text)
    say(f"pinned {', '.join(f'{p.name}=={version}' for p in spec.packages)} in pyproject.toml and requirements.lock")
    return True


def reinstall(spec: pins.Runner, failures: list[str]) -> bool:
    if spec.registry == "npm":
        return True  # npm install --save-exact installed it
    return run([PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-c", "requirements.lock",
                "-e", f".[{EXTRAS[spec.name]}]"], what="the reinstall from requirements.lock", failures=failures)


def snapshot(spec: pins.Runner, out: Path, failures: list[str], fixtures: Path | None = None) -> dict | None:
    argv = [PY, "-m", "tools.bump.snapshot", spec.name, "--out", str(out)]
    if fixtures is not None:
        argv += ["--fixtures", str(fixtures)]
    if not run(argv, what=f"the {out.stem} snapshot", failures=failures, timeout=600):
        return None
    data: dict = json.loads(out.read_text())
    return data


def rewrite_versions_table() -> None:
    doc = ROOT / "docs" / "runners.md"
    table = pins.versions_table(pins.read_pins(), pins.cli_versions())
    doc.write_text(pins.with_versions_table(doc.read_text(), table))


# ----- the steps -----------------------------------------------------------------------------------------------
def take(runner_name: str, version: str | None, *, tests: bool = True) -> str:
    spec = pins.runner(runner_name)
    old = pins.read_pins()[spec.lead.name]
    target = version or newest(spec)
    say(f"== {spec.name}: {spec.lead.name} {old} -> {target}" + (" (already pinned: re-checking)"
                                                                   if target == old else ""))
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bump-") as tmp:
        work = Path(tmp)
        say("== the installed version's snapshot")
        before = snapshot(spec, work / "before.json", failures)
        if before is None:
            return verdict([], failures)
        say("== the pins")
        if not move_pins(spec, target, failures) or not reinstall(spec, failures):
            return verdict([], failures) + " (the lock files are edited: git diff / git checkout them)"
        say("== re-recording the fixtures (loopback only, the scripted model)")
        for recorder in RECORDERS[spec.name]:
            run([PY, recorder], what=f"{recorder}", failures=failures, timeout=1800)
        after = snapshot(spec, work / "after.json", failures)
        changes = diff_snapshots(spec.name, before, after) if after is not None else []
    say(f"== protocol diff {spec.lead.name} {old} -> {target} (CLI {before.get('clis')} -> "
        f"{(after or {}).get('clis')})")
    for line in report(changes):
        say(line)
    rewrite_versions_table()
    say("== docs/runners.md#versions rewritten")
    if tests:
        say("== lint")
        run(["make", "lint"], what="make lint", failures=failures)
        say(f"== {spec.name}'s tests, then every real-CLI test of {spec.name} across the suite")
        run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not real_cli", TEST_DIRS[spec.name],
             "tests/adapters", "tests/tools"], what=f"{TEST_DIRS[spec.name]}", failures=failures)
        run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "real_cli", "-k", spec.pytest_k, "tests"],
            what=f"the real-CLI tests of {spec.name} (-m real_cli -k {spec.pytest_k})", failures=failures)
    else:
        failures.append("the tests were not run (--no-tests)")
    return verdict(changes, failures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bump", description=__doc__.split("\n\n")[0])
    parser.add_argument("runner", nargs="?", help=f"one of {', '.join(pins.RUNNERS)}")
    parser.add_argument("version", nargs="?", help="default: the newest the registry serves")
    parser.add_argument("--versions-table", action="store_true", help="rewrite docs/runners.md#versions")
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="print two snapshots' protocol diff")
    parser.add_argument("--no-tests", action="store_true", help="skip lint and tests (never safe then)")
    args = parser.parse_args(argv)
    if args.versions_table:
        rewrite_versions_table()
        return 0
    if args.runner is None:
        parser.error("RUNNER is required")
    if args.diff:
        spec = pins.runner(args.runner)
        changes = diff_snapshots(spec.name, *(json.loads(Path(p).read_text()) for p in args.diff))
        for line in report(changes):
            say(line)
        say(verdict(changes, []))
        return 0
    result = take(args.runner, args.version, tests=not args.no_tests)
    say(result)
    return 0 if result == "safe" else 1


if __name__ == "__main__":
    sys.exit(main())
