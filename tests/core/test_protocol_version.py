"""The AG-UI version a run says it speaks: absent or any 1.x runs; another major is a 422 that says which it speaks."""

from __future__ import annotations

from harness import RunnerHarness
from process_bridge import FakeCliBridge, script

PROMPT = script({"text": "hi"})


async def test_protocol_versions(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        for number, version in enumerate([None, "1.0", "1.3.2", "1"]):
            body = runner.run_body(f"t{number}", PROMPT)
            if version is not None:
                body["protocolVersion"] = version
            async with runner.client.stream("POST", "/run", json=body) as response:
                assert response.status_code == 200, version
                await response.aread()
        for version in ("2.0", "0.9", "", "one"):
            body = {**runner.run_body("tx", PROMPT), "protocolVersion": version}
            answer = await runner.client.post("/run", json=body)
            assert answer.status_code == 422, version
            error = answer.json()
            assert error["code"] == "UNSUPPORTED_PROTOCOL" and "AG-UI 1.x" in error["error"]
        assert runner.app.runtime.runs.thread("tx") is None  # nothing ran
