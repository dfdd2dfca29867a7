"""When the Gemini CLI fails, the person reads why: a broken workspace ``.gemini/settings.json`` (written by the agent,
the Files tab or a cloned repository) is named with its problem in ``/ready`` and in the run's ``RUN_ERROR``; the
health probe stays 200; once the file is fixed the next run works without a restart. The real CLI, loopback only."""

from __future__ import annotations

import asyncio

import pytest
from git_remote import bare_repo, remotes_in
from runners import scripted_runner

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]
BROKEN = '{"general": {"vimMode": tru'


async def ready_detail(runner) -> tuple[int, str]:
    async with asyncio.timeout(60):
        while True:
            response = await runner.harness.client.get("/ready")
            if response.status_code == 200 or "settings.json" in response.text:
                return response.status_code, response.text
            await asyncio.sleep(0.1)


async def test_a_pod_that_starts_with_a_broken_settings_file_names_it(tmp_path, monkeypatch) -> None:
    settings = tmp_path / "workspace" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(BROKEN)
    async with scripted_runner("gemini-cli", tmp_path, monkeypatch) as runner:
        status, detail = await ready_detail(runner)
        assert status == 503, detail
        assert str(settings) in detail and "JSON" in detail, detail
        assert (await runner.harness.client.get("/health")).status_code == 200
        events = await runner.harness.run("t1", "NOTOOL hello")
        assert events[-1]["type"] == "RUN_ERROR", events[-1]
        assert str(settings) in events[-1]["message"] and "JSON" in events[-1]["message"], events[-1]["message"]

        settings.unlink()  # fixed: the next run starts the CLI again, no restart of the runner
        events = await runner.harness.run("t1", "NOTOOL hello again")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        status, _ = await ready_detail(runner)
        assert status == 200


async def test_a_broken_settings_file_in_a_workflows_folder_is_named_in_the_threads_error(tmp_path,
                                                                                          monkeypatch) -> None:
    """The live CLI reads the settings of the folder a session works in when the session starts there."""
    url = bare_repo(remotes_in(tmp_path), "workflows", {"flow/.ambient/ambient.json": "{}",
                                                        "flow/.gemini/settings.json": BROKEN})
    async with scripted_runner("gemini-cli", tmp_path, monkeypatch) as runner:
        selected = await runner.harness.client.post("/workflow", json={"gitUrl": url, "path": "flow"})
        assert selected.status_code == 200, selected.text
        settings = tmp_path / "workspace" / "workflows" / "workflows" / ".gemini" / "settings.json"
        events = await runner.harness.run("t1", "NOTOOL a new thread")
        assert events[-1]["type"] == "RUN_ERROR", events[-1]
        message = events[-1]["message"]
        assert "The runner failed" not in message and "session/new" in message, message
        assert str(settings) in message and "JSON" in message, message
        assert (await runner.harness.client.get("/health")).status_code == 200

        settings.write_text('{"general": {"vimMode": false}}')
        start = len(runner.server.bodies())
        events = await runner.harness.run("t1", "NOTOOL fixed now")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        # the failed run's workflow preamble never reached the model: this run carries it
        assert "Working directory: " in "".join(str(body) for body in runner.server.bodies()[start:])
