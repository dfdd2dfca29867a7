"""What the real-agent tests of each ACP preset share (tests/acp/test_<agent>.py): one runner for the module's
threads, the scripted server put back after each test, and the checks every preset must pass the same way (an
approval and a refusal from the question card, an interrupt and the next run, the model key out of the agent's
tree). A test module imports the fixtures it uses (``module_patch``, ``scripted_as_it_was``) and makes its
``runner`` with ``module_runner``."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from page_session import PageSession
from pausing import ASK, WRITE, interrupts_of
from runners import ScriptedRunner, environments, scripted_runner

from ambient_runner.bridges.acp.bridge import AcpBridge

PLAIN = ["Hello from the scripted model.", " No tools were needed."]


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


def bridge_of(runner: ScriptedRunner) -> AcpBridge:
    assert isinstance(runner.bridge, AcpBridge)
    return runner.bridge


@pytest.fixture(scope="module")
def module_patch() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def module_runner(name: str, settings: dict[str, Any]) -> Any:
    """The module's ``runner`` fixture: the preset's real agent on its API's scripted server."""

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def runner(tmp_path_factory: pytest.TempPathFactory, module_patch: pytest.MonkeyPatch
                     ) -> AsyncIterator[ScriptedRunner]:
        async with scripted_runner("acp", tmp_path_factory.mktemp(name), module_patch, **settings) as shared:
            yield shared

    return runner


@pytest.fixture(autouse=True)
def scripted_as_it_was(request: pytest.FixtureRequest) -> Iterator[None]:
    """The shared scripted server's command and pace put back after each test."""
    if "runner" not in request.fixturenames:
        yield
        return
    server = request.getfixturevalue("runner").server
    saved = server.shell_command, server.slow_delay
    yield
    server.shell_command, server.slow_delay = saved


@dataclass(frozen=True)
class Asked:
    """What a prompt under ``ask`` makes the agent ask about: the prompt, the file it makes and its text, the card's
    words."""

    prompt: str = WRITE
    made: str = "out.txt"
    text: str = "hello\n"
    what: str = "run a command"  # "<agent> wants to <what>"
    shown: str = "echo hello > out.txt"  # in the card's question


async def approved_from_the_card(runner: ScriptedRunner, thread: str, tool: str | None, who: str,
                                 asked_for: Asked = Asked()) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``WRITE`` (or ``asked_for``) under ``ask``: the card asks about it, Approve runs it once; (the interrupt, the
    events of the run that asked)."""
    out = runner.settings.workspace_path / asked_for.made
    out.unlink(missing_ok=True)
    session = PageSession(runner.harness.post, thread)
    asked = await session.say(asked_for.prompt, forwarded_props=ASK)
    (interrupt,) = interrupts_of(asked)
    assert interrupt["reason"] == "tool_approval" and tool in (None, interrupt["metadata"]["toolName"])
    assert interrupt["message"].startswith(f"{who} wants to {asked_for.what}")
    question = session.card_question()
    assert asked_for.shown in question["question"]
    assert not out.exists()
    await session.answer_card({question["question"]: "Approve"})
    assert out.read_text() == asked_for.text
    (shell,) = session.shell_cards()  # the command ran once, and its card has its result
    assert shell["id"] == interrupt["toolCallId"] and not shell["pending"]
    assert session.page.status() == "idle"
    session.check_reload()
    return interrupt, asked


async def denied_from_the_card(runner: ScriptedRunner, thread: str, why: str, asked_for: Asked = Asked()
                               ) -> list[dict[str, Any]]:
    """``WRITE`` (or ``asked_for``) under ``ask`` refused from the card in the person's words, then a next message:
    it never ran; the events of the run that brought the refusal."""
    out = runner.settings.workspace_path / asked_for.made
    out.unlink(missing_ok=True)
    session = PageSession(runner.harness.post, thread)
    await session.say(asked_for.prompt, forwarded_props=ASK)
    question = session.card_question()
    denied = await session.answer_card({question["question"]: why})
    await session.say("NOTOOL ok then")
    assert not out.exists()
    assert session.page.status() == "idle"
    session.check_reload()
    return denied


async def cancelled_then_next(runner: ScriptedRunner, thread: str, first: str, then: str) -> list[dict[str, Any]]:
    """A run, then one interrupted (``cancelled``), then ``then``: the process kept; the events of the last."""
    await runner.harness.run(thread, first)
    pid = bridge_of(runner).live.pgid
    cancelled = (await runner.interrupted_answer(thread))[-1]
    assert cancelled["type"] == "RUN_FINISHED" and cancelled["outcome"] == {"type": "cancelled"}
    after = await runner.harness.run(thread, then)
    assert bridge_of(runner).live.pgid == pid and texts(after) == PLAIN  # the cancel kept the process
    return after


async def key_stays_in_the_runner(runner: ScriptedRunner, key_variable: str, base_url_variable: str | None,
                                  upstream_key: Callable[[dict[str, str]], str | None]) -> None:
    """The agent's environment and its tree hold the proxy's placeholder, no file in the state dir holds the key,
    and the proxy put the real key on every model request (``upstream_key``: the key as a request's headers hold
    it; ``base_url_variable``: where the agent finds the proxy's URL, None when in its config)."""
    await runner.harness.run("t-key", "NOTOOL hello from the key thread")
    bridge = bridge_of(runner)
    assert bridge.model_proxy is not None and bridge.live.pgid is not None
    environment = bridge._environment()  # noqa: SLF001 - what the agent is started with
    assert runner.api_key not in environments(bridge.live.pgid) and runner.api_key not in repr(environment)
    assert environment[key_variable] == bridge.model_proxy.placeholder
    if base_url_variable is not None:  # else the agent's own config names the proxy
        assert environment[base_url_variable].startswith(bridge.model_proxy.base_url)
    assert not [p for p in runner.settings.state_dir.rglob("*") if p.is_file() and runner.api_key in
                p.read_text(errors="replace")]
    assert runner.server.requests and all(
        upstream_key({k.lower(): v for k, v in r.headers.items()}) == runner.api_key for r in runner.server.requests)


@dataclass
class ToolTurn:
    """A turn whose shell call created a file, and the next turn of its thread."""

    events: list[dict[str, Any]]
    start: dict[str, Any]
    arguments: dict[str, Any]
    result: dict[str, Any]
    later: list[dict[str, Any]]


async def tool_turn_then_next(runner: ScriptedRunner, thread: str, prompt: str, then: str) -> ToolTurn:
    """``prompt`` runs the scripted shell command, ``then`` follows in the same process; the call's events."""
    events = await runner.harness.run(thread, prompt)
    pid = bridge_of(runner).live.pgid
    later = await runner.harness.run(thread, then)
    assert bridge_of(runner).live.pgid == pid  # one process for the pod's turns
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    arguments = json.loads(next(e for e in events if e["type"] == "TOOL_CALL_ARGS")["delta"])
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == start["toolCallId"] and result["content"].strip()
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert not [e for e in events if "rawEvent" in e], [e for e in events if "rawEvent" in e]
    assert texts(later) == PLAIN and later[-1]["type"] == "RUN_FINISHED"
    return ToolTurn(events, start, arguments, result, later)


SWITCH_PROMPTS = ("NOTOOL on the switched model", "NOTOOL back on the first model", "NOTOOL a run that names its model")


async def switched_runs(runner: ScriptedRunner, thread: str, first: str, other: str) -> None:
    """``POST /model`` to ``other`` and a run, back to ``first`` and a run, then a run that names ``other``
    (``SWITCH_PROMPTS``)."""
    switch = await runner.harness.client.post("/model", json={"model": other})
    assert switch.status_code == 200, switch.text
    try:
        await runner.harness.run(thread, SWITCH_PROMPTS[0])
    finally:
        assert (await runner.harness.client.post("/model", json={"model": first})).status_code == 200
    await runner.harness.run(thread, SWITCH_PROMPTS[1])
    await runner.harness.run(thread, SWITCH_PROMPTS[2], {"model": other})


async def asked_despite_repository_settings(runner: ScriptedRunner, folder_name: str,
                                            settings: dict[str, Any]) -> dict[str, Any]:
    """``WRITE`` under ``ask`` with the repository's own agent settings in ``<folder_name>/settings.json`` (which
    would allow the command, or move the model traffic): still asked; the interrupt."""
    folder = runner.settings.workspace_path / folder_name
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings))
    before = len(runner.server.requests)
    try:
        (interrupt,) = interrupts_of(await runner.harness.run("t-repo", WRITE, ASK))
    finally:
        (folder / "settings.json").unlink()
        folder.rmdir()
    assert len(runner.server.requests) > before  # through the proxy to the scripted model
    return interrupt


RESTART_PROMPTS = ("NOTOOL remember the word tangerine", "NOTOOL which word?")


async def restarted(root: Path, monkeypatch: pytest.MonkeyPatch, settings: dict[str, Any]) -> ScriptedRunner:
    """A thread's first turn on one runner, its second on a new runner on the same state dir (``RESTART_PROMPTS``):
    its session loaded, not a new one; the second runner (stopped)."""
    async with scripted_runner("acp", root, monkeypatch, **settings) as first:
        await first.harness.run("t-restart", RESTART_PROMPTS[0])
        session = bridge_of(first).sessions.get("t-restart")
    assert session is not None
    async with scripted_runner("acp", root, monkeypatch, **settings) as again:
        events = await again.harness.run("t-restart", RESTART_PROMPTS[1])
        assert bridge_of(again).sessions.get("t-restart") == session  # loaded, not a new session
    assert texts(events) == PLAIN
    return again


async def reported_agent(runner: ScriptedRunner, preset: str, package: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``/capabilities`` after a run: the runner's (its framework the preset's, the deployment's models) and the
    agent's (``custom.agent``: the preset, the pinned version); (capabilities, agent)."""
    await runner.harness.run("t-caps", "NOTOOL hello from the capabilities thread")
    caps = (await runner.harness.client.get("/capabilities")).json()
    agent = caps["custom"]["agent"]
    assert caps["custom"]["runnerType"] == "acp" and caps["framework"] == f"acp-{preset}"
    assert caps["custom"]["models"] == runner.settings.runner_models.split(",")
    pinned = json.loads((Path(__file__).parents[2] / "package.json").read_text())["devDependencies"][package]
    assert agent["preset"] == preset and agent["version"] == pinned
    return caps, agent


# a preset's real-agent test module: the real CLI in the loopback-only namespace, one event loop for the module
PRESET_MARKS = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network"),
                pytest.mark.asyncio(loop_scope="module")]


# the runner's MCP config for a preset's tests: one stdio server whose ``say(text)`` answers ``echo: <text>``
ECHO_SERVER = Path(__file__).parents[1] / "mcp" / "echo_server.py"
MCP_SERVERS = json.dumps({"mcpServers": {"echo": {"command": sys.executable, "args": [str(ECHO_SERVER)]}}})


def preset_settings(agent: str, models: str) -> dict[str, Any]:
    """The runner's settings for a preset's tests: never asking unless a run does, the deployment's models, the echo
    MCP server (``MCP_SERVERS``)."""
    return {"acp_agent": agent, "runner_approval_policy": "auto", "runner_models": models,
            "mcp_servers_json": MCP_SERVERS}


async def mcp_tool_answered(runner: ScriptedRunner, thread: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scripted model calls the echo server's ``say`` (the runner's MCP config, passed in ``session/new``; after
    a search for it where the agent defers MCP tools): the call's result is the server's answer, and the model
    receives it; (the call's start, its result)."""
    before = len(runner.server.requests)
    events = await runner.harness.run(thread, "MCPTOOL:echo.say please")
    calls = [e for e in events if e["type"] in ("TOOL_CALL_START", "TOOL_CALL_RESULT")]
    result = next((e for e in calls if e["type"] == "TOOL_CALL_RESULT" and "echo: " in e["content"]), None)
    assert result is not None, calls
    start = next(e for e in calls if e["type"] == "TOOL_CALL_START" and e["toolCallId"] == result["toolCallId"])
    assert start["toolCallName"] == "mcp__echo__say"  # as the runner's configuration names it, whatever the agent's
    assert "echo: " in json.dumps([r.body for r in runner.server.requests[before:]])
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    return start, result
