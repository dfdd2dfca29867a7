"""Paths the platform sends (``/rel``, relative to ``WORKSPACE_PATH``), resolved so that nothing outside the
workspace, and nothing of the runner's state dir, is ever read or written.

Refused (``PathRefused``, a 400 with its reason): NUL and other control characters, ``..`` segments, a path that
leaves the workspace through a symlink, and the state dir (``$RUNNER_STATE_ROOT/$RUNNER_STATE_DIR``, and
``/<stateDir>`` at the workspace root, where the platform's operator keeps it).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ag_ui_cli_common.errors import ErrorCode, RunnerError

MAX_PATH_CHARS = 4096


class PathRefused(RunnerError, ValueError):
    """A path the workspace endpoints do not touch; the message says why."""

    code = ErrorCode.INVALID_PATH


class LinkRefused(PathRefused):
    """A link (a symlink, a ``.git`` file, a repository setting naming a folder) that leads out of the workspace or
    into the state dir, or a top folder that is a link: never followed; the message names it."""

    code = ErrorCode.PATH_REFUSED


@dataclass(frozen=True)
class Workspace:
    root: Path
    state_dir: Path

    @classmethod
    def of(cls, workspace_path: Path, state_dir: Path) -> Workspace:
        return cls(Path(workspace_path).resolve(), Path(state_dir).resolve())

    def lexical(self, raw: str) -> Path:
        """``raw`` under the workspace as written (symlinks not followed); refused when it is malformed."""
        if len(raw) > MAX_PATH_CHARS:
            raise PathRefused(f"the path is longer than {MAX_PATH_CHARS} characters")
        if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in raw):
            raise PathRefused("the path contains a NUL, another control character or a lone surrogate")
        relative = PurePosixPath(raw.replace("\\", "/").lstrip("/"))
        if ".." in relative.parts:
            raise PathRefused("the path contains '..'")
        return self.root / relative

    def resolve(self, raw: str, *, allow_root: bool = True) -> Path:
        """The real path of ``raw`` inside the workspace (it need not exist)."""
        return self.check(self.lexical(raw), allow_root=allow_root)

    def check(self, path: Path, *, allow_root: bool = True) -> Path:
        """Where ``path`` really leads (symlinks followed), refused unless that is inside the workspace."""
        try:
            target = path.resolve()  # symlinks followed: where a read or write would really go
        except (RuntimeError, OSError):  # a symlink loop
            raise PathRefused("the path is a symlink loop") from None
        except ValueError:  # an embedded NUL
            raise PathRefused("the path contains a NUL") from None
        if target != self.root and self.root not in target.parents:
            raise PathRefused("the path leaves the workspace")
        if target == self.root and not allow_root:
            raise PathRefused("the path is the workspace itself")
        if self.in_state_dir(target):
            raise PathRefused("the path is the runner's state dir")
        return target

    def parts(self, raw: str) -> str:
        """``raw`` checked (``lexical``) and written relative to the root, ``a/b``; ``""`` for the root."""
        inside = self.lexical(raw).relative_to(self.root).as_posix()
        return "" if inside == "." else inside

    def contains(self, path: Path) -> bool:
        """Whether ``path``, links followed, is inside the workspace and outside the state dir."""
        try:
            real = path.resolve()
        except (OSError, RuntimeError, ValueError):
            return False
        return (real == self.root or self.root in real.parents) and not self.in_state_dir(real)

    def top_folder(self, name: str) -> Path:
        """``repos`` or ``workflows`` under the root, refused when it is a link (it could lead anywhere)."""
        folder = self.root / name
        if folder.is_symlink():
            raise LinkRefused(f"/{name} is a symbolic link; the runner does not follow it")
        return folder

    def relative(self, path: Path) -> str:
        """``/rel``, as the platform shows it."""
        inside = path.relative_to(self.root).as_posix()
        return "/" if inside == "." else f"/{inside}"

    def in_state_dir(self, target: Path) -> bool:
        platform_state = self.root / self.state_dir.name  # /workspace/<stateDir> on the platform
        return any(target == d or d in target.parents for d in (self.state_dir, platform_state))
