"""What the real-agent tests of each ACP preset share (tests/acp/test_<agent>.py): one runner for the module's
threads, the scripted server put back after each test, and the checks every preset must pass the same way (an
approval and a refusal from the question card, an interrupt and the next run, an interrupt during a shell command,
the agent killed mid-turn, a message queued while a run streams, images in, the model key out of the agent's
tree). A test module imports the fixtures it uses (``module_patch``, ``scripted_as_it_was``) and makes its
``runner`` with ``module_runner``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp_report import settled_mcp_status
from media import data_part, jpeg, png, received_media_forms, webp
from page_session import PageSession
from pausing import ASK, WRITE, interrupts_of
from proctable import pid_alive
from runners import ScriptedRunner, cmdline, descendants, environments, scripted_runner, wait_for

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
    receives it; ``/mcp-status`` finds the server connected (the runner's probe, ACP reporting nothing of it);
    (the call's start, its result)."""
    before = len(runner.server.requests)
    events = await runner.harness.run(thread, "MCPTOOL:echo.say please")
    calls = [e for e in events if e["type"] in ("TOOL_CALL_START", "TOOL_CALL_RESULT")]
    result = next((e for e in calls if e["type"] == "TOOL_CALL_RESULT" and "echo: " in e["content"]), None)
    assert result is not None, calls
    start = next(e for e in calls if e["type"] == "TOOL_CALL_START" and e["toolCallId"] == result["toolCallId"])
    assert start["toolCallName"] == "mcp__echo__say"  # as the runner's configuration names it, whatever the agent's
    assert "echo: " in json.dumps([r.body for r in runner.server.requests[before:]])
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert runner.harness.client is not None
    status = await settled_mcp_status(runner.harness.client)
    assert [(s["name"], s["status"], s.get("tools"), s["source"]) for s in status] == [
        ("echo", "connected", ["say"], "runner probe")], status
    return start, result


def holding(runner: ScriptedRunner, words: str) -> list[Any]:
    """The model requests whose body holds ``words``, in order."""
    return [r for r in runner.server.requests if words in json.dumps(r.body)]


KILL_PROMPTS = ("NOTOOL remember the word kumquat", "NOTOOL still there after the kill?")


async def killed_mid_turn_then_next(runner: ScriptedRunner, thread: str) -> list[dict[str, Any]]:
    """A turn (``KILL_PROMPTS[0]``), then the agent's process group killed (SIGKILL) while the next answer streams:
    that run ends ``RUN_ERROR`` saying the next run starts it again, the agent is started again, and the thread's
    next run (``KILL_PROMPTS[1]``) continues its session (loaded, not new: the model request holds the first
    turn); the events of that last run."""
    first, then = KILL_PROMPTS
    await runner.harness.run(thread, first)
    bridge = bridge_of(runner)
    session, pid, restarts = bridge.sessions.get(thread), bridge.live.pgid, bridge.live.restarts
    assert session is not None and pid is not None
    run = await runner.slow_answer(thread)
    tree = [pid, *descendants(pid)]  # the agent, its sessions' processes, its MCP servers
    try:
        os.killpg(pid, signal.SIGKILL)
        killed = await asyncio.wait_for(run, timeout=60)
    finally:
        runner.server.slow_delay = 0.0
    assert killed[-1]["type"] == "RUN_ERROR" and killed[-1]["code"] == "CLI_KILLED", killed[-1]
    assert "killed by SIGKILL" in killed[-1]["message"], killed[-1]
    assert "The next run starts it again and continues the thread." in killed[-1]["message"], killed[-1]
    await wait_for(lambda: bridge.live.restarts > restarts and bridge.live.pgid not in (None, pid), timeout=60,
                   what="the agent started again")
    after = await runner.harness.run(thread, then)
    assert texts(after) == PLAIN and after[-1]["type"] == "RUN_FINISHED", after[-1]
    assert bridge.sessions.get(thread) == session  # loaded, not a new session
    assert [r for r in holding(runner, then) if first in json.dumps(r.body)]  # the model saw the first turn again
    assert not [p for p in tree if pid_alive(p)]  # nothing of the killed agent is left
    return after


QUEUE_PROMPTS = ("SLOW stream the first answer", "NOTOOL and then, after the queue?")


async def queued_while_streaming(runner: ScriptedRunner, thread: str) -> list[dict[str, Any]]:
    """A message (``QUEUE_PROMPTS[1]``) sent while a run streams its answer (``QUEUE_PROMPTS[0]``, ``SLOW``) on the
    same thread: accepted as ``queued`` (ACP v1 has no input mid-turn), run after that run ended, in the same
    session of the same agent process (its model request holds the whole first answer); the queued run's events."""
    first, then = QUEUE_PROMPTS
    bridge = bridge_of(runner)
    await runner.harness.run(thread, "NOTOOL open the queue thread")
    session, pid = bridge.sessions.get(thread), bridge.live.pgid
    runner.server.slow_delay = 0.1  # 3 s of answer: the message is sent once its first text is out
    try:
        before = len(runner.logged(thread))
        streaming = asyncio.create_task(runner.harness.run(thread, first))
        await wait_for(lambda: any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in runner.logged(thread)[before:]),
                       timeout=60, what="the slow answer's text")
        queued_run = asyncio.create_task(runner.harness.run(thread, then))
        streamed = await asyncio.wait_for(streaming, timeout=120)
        queued = await asyncio.wait_for(queued_run, timeout=120)
    finally:
        runner.server.slow_delay = 0.0
    slow_answer = [f"slow chunk {i}. " for i in range(runner.server.slow_chunks)]
    assert streamed[-1]["type"] == "RUN_FINISHED" and not streamed[-1].get("outcome"), streamed[-1]
    assert "".join(texts(streamed)) == "".join(slow_answer)  # the streaming run went on to its end
    (accepted,) = [e for e in queued if e["type"] == "CUSTOM"]
    assert accepted["name"] == "ambient:message_accepted" and accepted["value"]["mode"] == "queued", accepted
    assert queued[-1]["type"] == "RUN_FINISHED" and texts(queued) == PLAIN, queued[-1]
    assert bridge.sessions.get(thread) == session and bridge.live.pgid == pid  # the same session, the same agent
    # a model request of the queued message holds the whole first turn
    last = slow_answer[-1].strip()
    assert [r for r in holding(runner, then) if first in json.dumps(r.body) and last in json.dumps(r.body)]
    return queued


IMAGES = (("image/png", png(rgb=(0, 90, 200))), ("image/jpeg", jpeg()), ("image/webp", webp()))
IMAGE_PROMPT = "NOTOOL what are these three images?"


async def images_reach_the_model(runner: ScriptedRunner, thread: str, form: str) -> list[dict[str, Any]]:
    """A message with a PNG, a JPEG and a WebP (AG-UI data parts: ACP ``image`` blocks): the model request of the
    turn holds each one's bytes, in order, in the API's own image form (``form``: ``received_media_forms``); the
    run's events."""
    parts = [{"type": "text", "text": IMAGE_PROMPT}, *(data_part("image", m, data) for m, data in IMAGES)]
    events = await runner.harness.run(thread, parts)
    assert events[-1]["type"] == "RUN_FINISHED" and texts(events) == PLAIN, events[-1]
    with_images = [received_media_forms(r.body) for r in holding(runner, IMAGE_PROMPT)]
    assert [(form, m, data) for m, data in IMAGES] in with_images, [
        [(f, m, len(data)) for f, m, data in found] for found in with_images]
    return events


# the scripted model's command for an interrupt mid-command (not starting with a long sleep: Claude Code refuses that)
LONG_COMMAND = "echo started; sleep 27; echo late > late.txt"


def long_command(runner: ScriptedRunner) -> list[int]:
    """The live agent's descendants that run ``LONG_COMMAND`` (its shells and its sleep)."""
    agent = bridge_of(runner).live.pgid
    return [] if agent is None else [pid for pid, (_, state) in descendants(agent).items() if state != "Z" and (
        "late.txt" in cmdline(pid) or cmdline(pid).startswith("sleep 27"))]


AFTER_THE_LONG_COMMAND = "NOTOOL what happened to the long command?"


@dataclass
class MidCommand:
    """The events of a run interrupted during its command, and of the thread's next run."""

    interrupted: list[dict[str, Any]]
    after: list[dict[str, Any]]


async def interrupted_mid_command(runner: ScriptedRunner, thread: str) -> MidCommand:
    """``LONG_COMMAND`` run by the agent's shell tool, the run interrupted while it sleeps: the run ends
    ``cancelled``, every process of the command ends (its shell too, so ``echo late`` never runs), and the next run
    of the thread (``AFTER_THE_LONG_COMMAND``) answers in the same agent process (what it answers depends on how the
    agent tells its model of the interrupted call)."""
    late = runner.settings.workspace_path / "late.txt"
    late.unlink(missing_ok=True)
    runner.server.shell_command = LONG_COMMAND
    run = asyncio.create_task(runner.harness.run(thread, "run the long command"))
    await wait_for(lambda: [p for p in long_command(runner) if cmdline(p).startswith("sleep 27")], timeout=60,
                   what="the command's sleep")
    processes, pid = long_command(runner), bridge_of(runner).live.pgid
    assert [p for p in processes if not cmdline(p).startswith("sleep 27")], processes  # its shell too
    await wait_for(lambda: runner.seen(thread, "TOOL_CALL_START"), timeout=30, what="the command's call shown")
    assert (await runner.harness.interrupt(thread)).status_code == 200
    events = await asyncio.wait_for(run, timeout=60)
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}, events[-1]
    await wait_for(lambda: not [p for p in processes if pid_alive(p)], timeout=20, what="the command's processes ended")
    assert not late.exists()  # nothing after the sleep ran
    after = await runner.harness.run(thread, AFTER_THE_LONG_COMMAND)
    assert after[-1]["type"] == "RUN_FINISHED" and not after[-1].get("outcome") and texts(after), after[-1]
    assert bridge_of(runner).live.pgid == pid and holding(runner, AFTER_THE_LONG_COMMAND)  # the same agent goes on
    return MidCommand(events, after)
