"""Checks of an SDK's private names, for the tests of each ``sdk_private`` module: a name the module uses that the
installed SDK no longer has (or takes other parameters) fails with a message naming it, the installed version and
the version pyproject.toml pins."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
SOURCES = ("ambient_runner", "ag_ui_cli_common", "ag_ui_gemini_cli", "ag_ui_codex_sdk", "ag_ui_claude", "main.py")


def pinned(distribution: str) -> str:
    """The exact version pyproject.toml pins for ``distribution`` (``name==version``)."""
    found = re.search(rf'"{re.escape(distribution)}==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert found, f"pyproject.toml pins no exact version of {distribution}"
    return found.group(1)


def _where(distribution: str, module: str) -> str:
    return (f"{distribution} {importlib.metadata.version(distribution)} (pyproject.toml pins "
            f"{pinned(distribution)}): {module} relies on it; adapt {module} to the SDK's new internals")


def gone(distribution: str, module: str, what: str) -> AssertionError:
    return AssertionError(f"{what} is gone in {_where(distribution, module)}")


def check_callable(distribution: str, module: str, owner: Any, name: str, params: Iterable[str] = ()) -> None:
    """``owner.name`` exists, is callable and takes every parameter in ``params`` by name."""
    label = f"{getattr(owner, '__qualname__', owner)}.{name}" if name else getattr(owner, "__qualname__", str(owner))
    target = getattr(owner, name, None) if name else owner
    assert target is not None, f"{label} is gone in {_where(distribution, module)}"
    assert callable(target), f"{label} is no longer callable in {_where(distribution, module)}"
    accepted = inspect.signature(target).parameters
    missing = [p for p in params if p not in accepted]
    assert not missing, (f"{label} no longer takes {', '.join(missing)} (it takes {', '.join(accepted)}) in "
                         f"{_where(distribution, module)}")


def check_attribute(distribution: str, module: str, obj: Any, name: str) -> Any:
    """``obj`` (a fresh SDK object) has the attribute ``name``; its value."""
    assert hasattr(obj, name), (f"{type(obj).__qualname__} objects no longer have {name} in "
                                f"{_where(distribution, module)}")
    return getattr(obj, name)


def private_uses(names: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """Lines of the project's source (outside ``allowed`` files) that touch one of the SDK private ``names`` on
    an object other than ``self`` (``x._name``, ``getattr(x, "_name")``) or import an SDK's private module."""
    words = "|".join(re.escape(n) for n in names)
    pattern = re.compile(rf"(?<!self)(?<!cls)(?<!super\(\))\.({words})\b|getattr\([^)]*[\"']({words})[\"']"
                         rf"|^\s*from \S+ import .*\b({words})\b")
    allowed_paths = {ROOT / a for a in allowed}
    found = []
    for source in SOURCES:
        path = ROOT / source
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            if file in allowed_paths:
                continue
            for number, line in enumerate(file.read_text().splitlines(), start=1):
                if pattern.search(line):
                    found.append(f"{file.relative_to(ROOT)}:{number}: {line.strip()}")
    return found
