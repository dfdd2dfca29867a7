"""ambient-runner: runs a coding-agent CLI in a pod and streams its work as AG-UI events."""

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it): the same in the image, which copies the tree
