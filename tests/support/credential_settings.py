"""The check each runner's credential settings share: every variable its resolution reads is read by its own name,
and no credential shows in the settings' repr or str."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

import pytest
from pydantic import SecretStr

from ambient_runner.settings import CredentialSettings

C = TypeVar("C", bound=CredentialSettings)


def read_by_name(monkeypatch: pytest.MonkeyPatch, settings_type: type[C], names: Iterable[str], secrets: int,
                 also: Mapping[str, str] | None = None) -> C:
    """``names`` each set to a value of its own, then ``settings_type`` read from the environment: its variables are
    exactly those (and ``also``, set by the caller), ``secrets`` of its fields are credentials, and none of their
    values is in its repr or str. The settings, for the caller's own checks."""
    names = tuple(names)
    for name in names:
        monkeypatch.setenv(name, f"value-of-{name.lower()}")
    credentials = settings_type()
    assert credentials.variables() == {name: f"value-of-{name.lower()}" for name in names} | dict(also or {})
    shown = f"{credentials!r} {credentials}"
    values = [value.get_secret_value() for _, value in credentials if isinstance(value, SecretStr)]
    assert len(values) == secrets and not [value for value in values if value in shown]
    return credentials
