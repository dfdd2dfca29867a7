"""Start-up: settings errors, bridge selection, INITIAL_PROMPT."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness import RunnerHarness, check_stream
from process_bridge import FakeCliBridge, script
from runners import wait_for

from ambient_runner.bridges.contract import BridgeError
from ambient_runner.bridges.lazy import LazyModules

ROOT = Path(__file__).resolve().parents[2]


def start_main(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_"))}
    return subprocess.run([sys.executable, "-c", "import main"], cwd=ROOT, env=clean | env, text=True,
                          capture_output=True, timeout=60)


@pytest.mark.parametrize(("env", "expected"), [
    ({"RUNNER_TYPE": "langgraph"},
     "ambient-runner: invalid RUNNER_TYPE (got 'langgraph'): must be one of claude, gemini-cli, codex-sdk, acp, "
     "claude-agent-sdk"),
    ({"AGUI_PORT": "99999"}, "ambient-runner: invalid AGUI_PORT (got '99999'): Input should be less than or equal "
                             "to 65535"),
    ({"RUNNER_IDLE_TIMEOUT": "-1"}, "ambient-runner: invalid RUNNER_IDLE_TIMEOUT (got '-1'): Input should be "
                                    "greater than 0"),
    ({"RUNNER_STATE_DIR": "../etc"}, "ambient-runner: invalid RUNNER_STATE_DIR (got '../etc'): must be a plain "
                                     "directory name such as .gemini"),
    ({"WORKSPACE_PATH": "/srv/repo", "RUNNER_STATE_ROOT": "/srv/repo/.state"},
     "ambient-runner: invalid RUNNER_STATE_ROOT (got '/srv/repo/.state'): must lie outside WORKSPACE_PATH "
     "(/srv/repo): the CLI's state and credentials do not belong in the user's repository"),
    ({"WORKSPACE_PATH": "/srv/repo", "RUNNER_ATTACHMENTS_DIR": "/srv/repo/uploads"},
     "ambient-runner: invalid RUNNER_ATTACHMENTS_DIR (got '/srv/repo/uploads'): must lie outside WORKSPACE_PATH "
     "(/srv/repo): a message's attachments do not belong in the user's repository"),
    # a runner image (the Dockerfile's build arg RUNNER_TYPE) started as another runner names the image it needs
    ({"AMBIENT_RUNNER_IMAGE_RUNNERS": "codex-sdk", "RUNNER_TYPE": "claude-agent-sdk"},
     "ambient-runner: invalid RUNNER_TYPE (got 'claude-agent-sdk'): this image holds only the codex-sdk runner; "
     "claude runs in the image ambient-runner-claude (or the all-in-one image ambient-runner)"),
    ({"AMBIENT_RUNNER_IMAGE_RUNNERS": "claude", "RUNNER_TYPE": "gemini-cli"},
     "ambient-runner: invalid RUNNER_TYPE (got 'gemini-cli'): this image holds only the claude runner; "
     "gemini-cli runs in the image ambient-runner-gemini-cli (or the all-in-one image ambient-runner)"),
    ({"AMBIENT_RUNNER_IMAGE_RUNNERS": "langgraph"},
     "ambient-runner: invalid AMBIENT_RUNNER_IMAGE_RUNNERS (got 'langgraph'): must be all or one of claude, "
     "gemini-cli, codex-sdk, acp (the image's build arg RUNNER_TYPE)"),
])
def test_a_bad_setting_stops_the_process_with_one_line(env, expected):
    result = start_main(env)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [expected]


@pytest.mark.parametrize(("image", "runner_type"), [("codex-sdk", "codex-sdk"), ("claude", "claude-agent-sdk"),
                                                     ("all", "gemini-cli"), ("", "claude")])
def test_an_image_starts_the_runners_it_holds(image, runner_type):
    result = start_main({"AMBIENT_RUNNER_IMAGE_RUNNERS": image, "RUNNER_TYPE": runner_type})
    assert result.returncode == 0, result.stderr


def test_only_the_selected_bridge_is_imported_and_only_after_start():
    code = ("import sys, main\n"
            "from ambient_runner.bridges.registry import create_bridge\n"
            "def loaded(): return sorted(m for m in sys.modules if m.startswith(('ambient_runner.bridges.', "
            "'claude_agent_sdk', 'openai_codex', 'ag_ui_')))\n"
            "at_import = loaded(); create_bridge(main.settings); print([at_import, loaded()])")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_"))}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True, capture_output=True, timeout=60,
                            env=clean | {"RUNNER_TYPE": "gemini-cli"})
    assert result.returncode == 0, result.stderr
    at_import, after_boot = eval(result.stdout)  # noqa: S307 - our own printed lists
    assert [m for m in at_import if not m.startswith("ag_ui_cli_common")] == [  # the adapters' shared codes, and
        "ambient_runner.bridges.caller", "ambient_runner.bridges.contract",  # the contract and what it lends a bridge:
        "ambient_runner.bridges.host", "ambient_runner.bridges.options", "ambient_runner.bridges.registry",
        "ambient_runner.bridges.tasks"]  # no runner yet
    assert not [m for m in after_boot if m.startswith(("claude_agent_sdk", "openai_codex", "ag_ui_claude",
                                                       "ag_ui_codex_sdk", "ambient_runner.bridges.claude",
                                                       "ambient_runner.bridges.codex_sdk"))]
    assert "ambient_runner.bridges.gemini_cli.bridge" in after_boot


@pytest.mark.parametrize(("runner_type", "sdk"), [("codex-sdk", "openai_codex"), ("claude", "claude_agent_sdk")])
def test_the_sdk_is_imported_after_the_bridge_started_not_for_readiness(runner_type, sdk):
    """/ready needs the bridge, its readiness and capabilities, not the SDK (about a second to import): that is
    imported in a thread once the bridge has started, and a turn waits for it."""
    code = ("import asyncio, sys, main\n"
            "from ambient_runner.bridges.registry import create_bridge\n"
            "bridge = create_bridge(main.settings); bridge.readiness(); bridge.capabilities()\n"
            f"before = {sdk!r} in sys.modules\n"
            "bridge.sdk.start(); asyncio.run(bridge.sdk.ready())\n"
            f"print([before, {sdk!r} in sys.modules, bridge.sdk.loaded])")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_"))}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True, capture_output=True, timeout=60,
                            env=clean | {"RUNNER_TYPE": runner_type})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[False, True, True]"



# What an idle runner does not need, and what it cost before it was left out (RSS, deploy/image/coldstart.py): the
# state sync's archives (tarfile, sqlite3: 1.3 MiB, 60 ms of start), S3 and tracing only when set; libgit2 (pygit2)
# until the first workspace git call; the terminal client's typer. (FastAPI and pydantic-settings are the named
# stack; where the terminal client is installed, httpx also loads its own command-line tool, rich included.)
NOT_IMPORTED_IDLE = ("typer", "tarfile", "sqlite3", "ambient_runner.state.sync", "boto3", "botocore",
                     "opentelemetry.sdk", "opentelemetry.exporter", "pygit2", "ambient_runner.client")


@pytest.mark.parametrize("runner_type", ["gemini-cli", "codex-sdk", "claude"])
def test_an_idle_runner_imports_no_more_than_it_serves_with(runner_type, tmp_path):
    """The app built and its bridge started, with no state store and no trace destination set: none of the
    packages above is loaded (each one is memory every idle pod pays)."""
    code = ("import sys, main\n"
            "from ambient_runner.bridges.registry import create_bridge\n"
            "bridge = create_bridge(main.settings); bridge.readiness(); bridge.capabilities()\n"
            "main.app.openapi()\n"
            f"print(sorted(m for m in sys.modules if m.startswith({NOT_IMPORTED_IDLE!r})))")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_", "OTEL_", "LANGFUSE_",
                                                                       "MLFLOW_", "STATE_STORE"))}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True, capture_output=True, timeout=60,
                            env=clean | {"RUNNER_TYPE": runner_type, "WORKSPACE_PATH": str(tmp_path / "ws"),
                                         "RUNNER_STATE_ROOT": str(tmp_path / "state")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
async def test_a_missing_sdk_is_a_run_error_naming_the_runner(caplog):
    from ambient_runner.bridges.contract import BridgeError
    from ambient_runner.bridges.lazy import LazyModules

    lazy = LazyModules("codex-sdk", "json", "no_such_sdk_module")
    lazy.start()  # the background import fails quietly (a warning); the turn says why
    lazy._thread.join(10)  # noqa: SLF001 - wait for the background import
    assert "no_such_sdk_module" in caplog.text and not lazy.loaded
    with pytest.raises(BridgeError) as raised:
        await lazy.ready()
    assert raised.value.code == "CLI_NOT_FOUND"
    assert raised.value.message == ("The codex-sdk runner cannot load its SDK (No module named 'no_such_sdk_module'); "
                                    "this image may not hold the codex-sdk runner.")



async def test_a_bridge_whose_sdk_failed_to_import_is_loaded_as_far_as_it_goes(tmp_path):
    """``LazyModules.settled`` (what boot waits on to freeze the SDK's objects) returns when the import failed: the
    first turn, not boot, says why."""
    sdk = LazyModules("codex-sdk", "no_such_sdk_module")
    async with asyncio.timeout(10):
        await sdk.settled()
    assert not sdk.loaded
    with pytest.raises(BridgeError, match="cannot load its SDK"):
        await sdk.ready()


async def test_initial_prompt_runs_once_and_is_readable_through_events(tmp_path):
    state_root = tmp_path / "state"
    prompt = script({"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "started by itself"}})
    async with RunnerHarness(FakeCliBridge(tmp_path), initial_prompt=prompt, session_id="sess-1",
                             runner_state_root=state_root) as runner:
        for _ in range(200):
            state = runner.app.runtime.runs.thread("sess-1")
            if state is not None and state.active is None:
                break
            await asyncio.sleep(0.05)
        events = [e for _, e in await runner.events("sess-1")]
    check_stream(events)
    assert events[2]["delta"] == "started by itself"
    # A replaced pod with the same state dir does not run the initial prompt again.
    async with RunnerHarness(FakeCliBridge(tmp_path), initial_prompt=prompt, session_id="sess-1",
                             runner_state_root=state_root) as runner:
        await wait_for(runner.app.runtime.boot.done.is_set, what="the boot (which starts the first turn, if any)")
        assert runner.app.runtime.runs.thread("sess-1") is None


class FailingStartBridge(FakeCliBridge):
    async def startup(self) -> None:
        raise RuntimeError("scripted provider could not bind")


async def test_a_bridge_that_fails_to_start_keeps_serving_and_ready_says_why(tmp_path):
    async with RunnerHarness(FailingStartBridge(tmp_path)) as runner:
        assert (await runner.client.get("/health")).status_code == 200
        ready = await runner.client.get("/ready")
    assert ready.status_code == 503
    assert ready.json()["detail"] == "bridge startup failed: scripted provider could not bind"


class SlowStartBridge(FakeCliBridge):
    async def startup(self) -> None:
        await asyncio.sleep(1.5)


async def test_health_answers_while_booting_and_a_run_waits_for_the_boot(tmp_path):
    async with RunnerHarness(SlowStartBridge(tmp_path)) as runner:
        assert (await runner.client.get("/health")).status_code == 200
        ready = await runner.client.get("/ready")
        assert ready.status_code == 503
        assert ready.json()["detail"] == "starting: preparing the agent CLI"
        events = await runner.run("t1", script({"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                                                         "delta": "after boot"}}))
        assert (await runner.client.get("/ready")).status_code == 200
    assert events[2]["delta"] == "after boot"


async def test_the_runners_own_process_moves_what_start_up_built_out_of_the_collector(tmp_path):
    """main.py's app freezes start-up's objects once booted (a full collection then walks only what runs made); an
    app built without ``freeze_after_boot`` (as in the tests) leaves the collector alone."""
    built_before = [object()]  # a container start-up made, and one a run makes later
    before = gc.get_freeze_count()
    try:
        async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
            assert (await runner.client.get("/ready")).status_code == 200
        assert gc.get_freeze_count() == before
        async with RunnerHarness(FakeCliBridge(tmp_path), freeze_after_boot=True) as runner:
            assert (await runner.client.get("/ready")).status_code == 200
            assert gc.get_freeze_count() > before
            assert not any(o is built_before for o in gc.get_objects())  # in the permanent generation
            events = await runner.run("t1", script({"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                                                             "delta": "after the freeze"}}))
            made_by_run = [object()]
            assert any(o is made_by_run for o in gc.get_objects())  # still collected as usual
        assert events[2]["delta"] == "after the freeze"
    finally:
        gc.unfreeze()


class LateSdk(LazyModules):
    """An SDK still being imported when ``/ready`` answers (as Claude's and Codex's are), in until ``sdk_in``."""

    def __init__(self) -> None:
        super().__init__("fake", "json")
        self.sdk_in = asyncio.Event()

    async def settled(self) -> None:
        await self.sdk_in.wait()


class LateSdkBridge(FakeCliBridge):
    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.late = LateSdk()
        self.sdk = self.late
        self.sdk_in = self.late.sdk_in


async def test_what_a_bridge_imports_after_ready_leaves_the_collector_once_it_is_in(tmp_path):
    """The SDK a bridge imports in a thread after ``/ready`` (``bridges.lazy``) would stay in the collector's
    generations, frozen with nothing: a full collection walked it (17-30 ms) inside a turn."""
    bridge = LateSdkBridge(tmp_path)
    before = gc.get_freeze_count()
    try:
        async with RunnerHarness(bridge, freeze_after_boot=True) as runner:
            assert (await runner.client.get("/ready")).status_code == 200
            imported_late = [object()]  # what the SDK's import builds, after start-up's freeze
            assert any(o is imported_late for o in gc.get_objects())
            bridge.sdk_in.set()
            async with asyncio.timeout(10):
                while any(o is imported_late for o in gc.get_objects()):
                    await asyncio.sleep(0.01)
            assert gc.get_freeze_count() > before
            events = await runner.run("t1", script({"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                                                             "delta": "after both freezes"}}))
            assert events[2]["delta"] == "after both freezes"
    finally:
        gc.unfreeze()


def test_main_builds_the_app_that_freezes_after_boot():
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_"))}
    result = subprocess.run([sys.executable, "-c", "import main; print(main.app.runtime.boot.freeze)"], cwd=ROOT,
                            env=clean | {"RUNNER_TYPE": "gemini-cli"}, text=True, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
