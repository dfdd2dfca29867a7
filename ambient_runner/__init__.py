"""ambient-runner: runs a coding-agent CLI in a pod and streams its work as AG-UI events."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ambient-runner")
except PackageNotFoundError:  # run from a source tree that was not installed (the image copies it)
    __version__ = "unknown"
