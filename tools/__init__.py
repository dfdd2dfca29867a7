"""Maintainer's tools (not part of the runner): ``python -m tools.bump`` takes a CLI release."""
