"""The code's measures that no linter checks (issue 47): ``python -m tools.measures`` (``make lint``).

- ``Any`` per 1,000 product lines: every use of the name ``Any`` (``Any`` or ``typing.Any``) as an AST walk finds it,
  imports not counted, over the product files: ``ambient_runner/`` without ``client/`` (the terminal client) and
  ``scripted_models/`` (the provider's stand-in), plus the ``ag_ui_*`` adapter packages. At most 12.
- No product file over 450 lines.

Prints the figures and the files that weigh most; exits 1 when a bound is crossed, unless ``--report`` (print only).
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ANY_PER_1000_LINES = 12.0
MAX_FILE_LINES = 450
EXCLUDED = ("ambient_runner/client", "ambient_runner/scripted_models")  # not product code for these measures
TOP = 10


@dataclass(frozen=True)
class FileMeasure:
    path: str  # relative to the root, with forward slashes
    lines: int
    any_count: int


@dataclass(frozen=True)
class Measures:
    files: tuple[FileMeasure, ...]

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def any_count(self) -> int:
        return sum(f.any_count for f in self.files)

    @property
    def any_per_1000(self) -> float:
        return 1000 * self.any_count / self.lines if self.lines else 0.0

    @property
    def long_files(self) -> list[FileMeasure]:
        return sorted((f for f in self.files if f.lines > MAX_FILE_LINES), key=lambda f: -f.lines)

    @property
    def ok(self) -> bool:
        return self.any_per_1000 <= ANY_PER_1000_LINES and not self.long_files


def count_any(source: str) -> int:
    """The uses of ``Any`` in a module's source: names and attributes, not the imports that bring it in."""
    imports = (ast.Import, ast.ImportFrom)
    count = 0
    stack: list[ast.AST] = [ast.parse(source)]
    while stack:
        node = stack.pop()
        if isinstance(node, imports):
            continue
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        count += name == "Any"
        stack.extend(ast.iter_child_nodes(node))
    return count


def product_files(root: Path) -> list[Path]:
    """``ambient_runner/`` (without the excluded folders) and every ``ag_ui_*`` package under ``root``."""
    packages = [root / "ambient_runner", *sorted(p for p in root.glob("ag_ui_*") if p.is_dir())]
    found = []
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if not any(relative.startswith(excluded + "/") for excluded in EXCLUDED):
                found.append(path)
    return found


def measure(root: Path) -> Measures:
    files = []
    for path in product_files(root):
        source = path.read_text(encoding="utf-8")
        files.append(FileMeasure(path.relative_to(root).as_posix(), len(source.splitlines()), count_any(source)))
    return Measures(tuple(files))


def report(measures: Measures) -> str:
    lines = [f"Any: {measures.any_count} in {measures.lines} product lines = {measures.any_per_1000:.1f} per 1,000 "
             f"(bound {ANY_PER_1000_LINES:g})"]
    heaviest = sorted((f for f in measures.files if f.any_count), key=lambda f: (-f.any_count, f.path))[:TOP]
    lines += [f"  {f.any_count:4d}  {f.path} ({f.lines} lines)" for f in heaviest]
    long_files = measures.long_files
    lines.append(f"files over {MAX_FILE_LINES} lines: {len(long_files)}")
    lines += [f"  {f.lines:4d}  {f.path}" for f in long_files]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.measures",
                                     description="Any per 1,000 product lines and the files over 450 lines.")
    parser.add_argument("--report", action="store_true", help="print the figures only, exit 0 even over a bound")
    parser.add_argument("--still-long", action="append", default=[], metavar="FILE",
                        help="a file known to be over the line bound, not split yet (no other may grow past it)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the project's root")
    args = parser.parse_args(argv)
    measures = measure(args.root)
    print(report(measures))
    unexpected = [f for f in measures.long_files if f.path not in args.still_long]
    if args.report or (measures.any_per_1000 <= ANY_PER_1000_LINES and not unexpected):
        return 0
    print("over a bound (issue 47): fewer Any, or split the long files", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
