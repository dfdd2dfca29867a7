"""The Codex SDK's private names the runner uses (ambient_runner/bridges/codex_sdk/sdk_private.py) exist in the
installed, pinned SDK with the parameters used; no other module touches them."""

from __future__ import annotations

import dataclasses

import pytest
from openai_codex import AsyncCodex, AsyncThread, CodexConfig
from openai_codex import api as codex_api
from openai_codex._message_router import _TurnSubscription
from openai_codex.api import AsyncTurnHandle
from openai_codex.async_client import AsyncCodexClient
from openai_codex.client import CodexClient
from sdk_private_check import check_attribute, check_callable, pinned, private_uses

from ambient_runner.bridges.codex_sdk import sdk_private

SDK = "openai-codex"
MODULE = "ambient_runner/bridges/codex_sdk/sdk_private.py"
PRIVATE = ("_client", "_sync", "_proc", "_stderr_tail", "_ensure_initialized", "_start_turn", "_codex",
           "_subscription", "_handle_server_request", "_write_message", "_to_wire_turn_input", "_sandbox_policy")


def test_the_private_functions_take_what_the_runner_passes() -> None:
    check_callable(SDK, MODULE, codex_api, "_to_wire_turn_input", ["input"])
    check_callable(SDK, MODULE, codex_api, "_sandbox_policy", ["sandbox"])
    check_callable(SDK, MODULE, AsyncCodex, "_ensure_initialized")
    check_callable(SDK, MODULE, AsyncCodexClient, "start")
    check_callable(SDK, MODULE, AsyncCodexClient, "_start_turn", ["thread_id", "input_items", "params", "for_handle"])
    check_callable(SDK, MODULE, AsyncCodexClient, "thread_start", ["params"])
    check_callable(SDK, MODULE, AsyncCodexClient, "request", ["method", "params", "response_model"])
    check_callable(SDK, MODULE, CodexClient, "__init__", ["config"])
    check_callable(SDK, MODULE, CodexClient, "_handle_server_request", ["msg"])  # AnsweringClient overrides both
    check_callable(SDK, MODULE, CodexClient, "_write_message", ["payload"])
    check_callable(SDK, MODULE, CodexClient, "_stderr_tail", ["limit"])
    check_callable(SDK, MODULE, CodexClient, "next_notification")
    check_callable(SDK, MODULE, _TurnSubscription, "next")  # what ``turn_subscription`` gives (turn_feed reads it)
    check_callable(SDK, MODULE, _TurnSubscription, "close")


def test_the_private_attributes_are_where_the_runner_reads_them() -> None:
    codex = AsyncCodex(CodexConfig())  # nothing is spawned before start()
    client = check_attribute(SDK, MODULE, codex, "_client")
    assert isinstance(client, AsyncCodexClient), f"AsyncCodex._client is a {type(client)}, not an AsyncCodexClient"
    sync = check_attribute(SDK, MODULE, client, "_sync")
    assert isinstance(sync, CodexClient), f"AsyncCodexClient._sync is a {type(sync)}, not a CodexClient"
    assert check_attribute(SDK, MODULE, sync, "_proc") is None  # the Popen, once started
    assert sdk_private.sync_client(codex) is sync and sdk_private.process_of(codex) is None

    answering = sdk_private.AnsweringClient(CodexConfig(), loop=None, on_request=lambda *_: None)  # type: ignore[arg-type]
    sdk_private.use_sync_client(codex, answering)
    assert sdk_private.sync_client(codex) is answering

    for cls, field in ((AsyncThread, "_codex"), (AsyncTurnHandle, "_codex"), (AsyncTurnHandle, "_subscription")):
        fields = [f.name for f in dataclasses.fields(cls)]
        assert field in fields, f"{cls.__qualname__} has no field {field} (it has {fields}); see {MODULE}"
    thread = AsyncThread(codex, "thread-1")
    assert sdk_private.codex_of(thread) is codex
    handle = AsyncTurnHandle(codex, "thread-1", "turn-1", _subscription=None)
    assert (handle.thread_id, handle.id) == ("thread-1", "turn-1")


def test_a_changed_sdk_fails_naming_the_attribute_and_the_pinned_version(monkeypatch: pytest.MonkeyPatch) -> None:
    async def renamed(self: object, thread_id: str, input_items: object, params: object) -> None: ...

    monkeypatch.setattr(AsyncCodexClient, "_start_turn", renamed)
    with pytest.raises(AssertionError) as failed:
        check_callable(SDK, MODULE, AsyncCodexClient, "_start_turn", ["thread_id", "for_handle"])
    assert "AsyncCodexClient._start_turn no longer takes for_handle" in str(failed.value)
    assert f"pins {pinned(SDK)}" in str(failed.value) and MODULE in str(failed.value)
    monkeypatch.delattr(AsyncCodexClient, "_start_turn")
    with pytest.raises(AssertionError, match="AsyncCodexClient._start_turn is gone in openai-codex"):
        check_callable(SDK, MODULE, AsyncCodexClient, "_start_turn")


def test_no_other_module_touches_the_codex_sdks_private_names() -> None:
    found = private_uses(PRIVATE, [MODULE])
    assert found == [], f"Codex SDK private names used outside {MODULE}:\n" + "\n".join(found)
