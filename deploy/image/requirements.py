"""The Python requirements of one image: pyproject.toml's common dependencies plus one runner's extra.

    python deploy/image/requirements.py codex-sdk [--pyproject pyproject.toml]   # one requirement a line
    python deploy/image/requirements.py all                                       # the all-in-one image

The Dockerfile (build arg ``RUNNER_TYPE``) installs what this prints with ``--constraint requirements.lock``, so
every version is still the lock's. ``all`` (or an empty runner type) is the ``all`` extra: every runner and the
terminal client. Standard library only: it runs in the image build before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

RUNNERS = ("claude", "gemini-cli", "codex-sdk")  # the all-in-one image's
OWN_IMAGE_ONLY = ("acp",)  # runners with images of their own only (one per ACP agent, none in the all-in-one image)
ALIASES = {"claude-agent-sdk": "claude"}  # as RUNNER_TYPE takes it
ALL = "all"
SELF_REFERENCE = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)\[(?P<extras>[^\]]*)\]\s*$")


class RequirementsError(ValueError):
    """A runner type or a pyproject.toml this script cannot use; the message says which."""


def runners_of(runner_type: str) -> tuple[str, ...]:
    """The runners an image built with ``RUNNER_TYPE=runner_type`` serves."""
    runner_type = ALIASES.get(runner_type.strip(), runner_type.strip())
    if runner_type in ("", ALL):
        return RUNNERS
    if runner_type not in RUNNERS + OWN_IMAGE_ONLY:
        raise RequirementsError(f"RUNNER_TYPE {runner_type!r}: the image build takes one of "
                                f"{', '.join(RUNNERS + OWN_IMAGE_ONLY)}, or {ALL} (empty) for the all-in-one image")
    return (runner_type,)


def _extra(project: dict, extra: str, seen: tuple[str, ...] = ()) -> list[str]:
    extras = project.get("optional-dependencies", {})
    if extra not in extras:
        raise RequirementsError(f"pyproject.toml has no extra {extra!r}")
    if extra in seen:
        raise RequirementsError(f"pyproject.toml: extra {extra!r} refers to itself ({' -> '.join(seen + (extra,))})")
    requirements = []
    for requirement in extras[extra]:
        match = SELF_REFERENCE.match(requirement)
        if match and match["name"].lower().replace("_", "-") == project["name"]:
            for inner in (e.strip() for e in match["extras"].split(",") if e.strip()):
                requirements += _extra(project, inner, seen + (extra,))
        else:
            requirements.append(requirement)
    return requirements


def requirements(runner_type: str, pyproject: Path) -> list[str]:
    """The common dependencies and the image's extra(s), each once, in pyproject order."""
    project = tomllib.loads(pyproject.read_text())["project"]
    runners = runners_of(runner_type)
    wanted = list(project["dependencies"])
    wanted += _extra(project, ALL) if len(runners) > 1 else _extra(project, runners[0])
    return list(dict.fromkeys(wanted))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runner_type", help=f"{', '.join(RUNNERS + OWN_IMAGE_ONLY)} or {ALL}")
    parser.add_argument("--pyproject", type=Path, default=Path("pyproject.toml"))
    parser.add_argument("--runners", action="store_true", help="print the runners the image serves, comma-separated")
    args = parser.parse_args(argv)
    try:
        if args.runners:
            print(",".join(runners_of(args.runner_type)))
        else:
            print("\n".join(requirements(args.runner_type, args.pyproject)))
    except RequirementsError as exc:
        print(f"requirements: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
