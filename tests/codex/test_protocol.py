"""The Codex protocol the runner uses (ag_ui_codex_sdk/protocol.py, its one list) is the code's and is in the pinned
binary's generated schema: a method, a notification or an experimental field the runner relies on that disappears
from ``codex app-server generate-json-schema --experimental`` fails here, named. No network: the generator only
writes files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ag_ui_codex_sdk import CodexEventAdapter, protocol
from ag_ui_codex_sdk.adapter import DROPPED, UNPARSED
from ambient_runner.bridges.codex_sdk import approvals
from ambient_runner.bridges.codex_sdk.config import bundled_codex
from tools.bump import codex_schema

ROOT = Path(__file__).resolve().parents[2]
# The real binary runs (only its schema generator, which writes files): inside the loopback-only namespace too.
pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    codex, _ = bundled_codex()
    assert codex is not None, "openai-codex-cli-bin is not installed"
    out = tmp_path_factory.mktemp("codex-schema")
    return {"experimental": codex_schema.generate(codex, out / "experimental"),
            "stable": codex_schema.generate(codex, out / "stable", experimental=False)}


def test_every_method_and_notification_the_runner_uses_is_in_the_pinned_schema(generated: dict[str, Path]) -> None:
    envelopes, _ = codex_schema.load(generated["experimental"])
    missing = [f"{method} ({envelope})" for envelope, methods, _, _ in codex_schema.ROLES for method in methods
               if method not in codex_schema.method_params(envelopes[envelope])]
    assert missing == [], "gone from the pinned codex's app-server schema: " + ", ".join(missing)


def test_every_experimental_field_the_runner_relies_on_is_in_the_pinned_schema(generated: dict[str, Path]) -> None:
    parts = codex_schema.used_protocol(*codex_schema.load(generated["experimental"]))
    assert codex_schema.experimental_missing(parts) == []


def test_the_experimental_fields_are_experimental_and_sent_where_the_list_says(generated: dict[str, Path]) -> None:
    """Each listed field is only in the experimental schema (else it belongs to the SDK's own params) and its
    module sends it by that name (the list is the code's)."""
    not_stable = codex_schema.experimental_missing(codex_schema.used_protocol(*codex_schema.load(generated["stable"])))
    for field in protocol.EXPERIMENTAL:
        assert any(m.startswith(f"{field.method} {field.field} ") for m in not_stable), (
            f"{field.method} {field.field} is in the stable schema now: move it out of protocol.EXPERIMENTAL")
        assert f'"{field.field}"' in (ROOT / field.module).read_text(), f"{field.module} does not send {field.field}"


def test_the_lists_are_the_code_s() -> None:
    handled = set(CodexEventAdapter("t", "r").handlers) - {UNPARSED}
    assert handled == set(protocol.TRANSLATED)
    assert DROPPED == set(protocol.DROPPED)
    answered = {approvals.COMMAND, approvals.FILE_CHANGE, approvals.TOOL_CALL, approvals.USER_INPUT,
                approvals.ELICITATION}
    assert answered == set(protocol.SERVER_REQUESTS)


def test_every_recorded_notification_is_one_the_runner_knows() -> None:
    seen = {json.loads(line)["method"] for path in (ROOT / "tests" / "fixtures" / "codex").glob("*.jsonl")
            for line in path.read_text().splitlines() if line.strip()}
    assert seen - set(protocol.NOTIFICATIONS) == set()
