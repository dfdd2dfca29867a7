"""A run's ``context`` (an array, or an object as the platform's backend may pass it) and ``state`` reach the agent
as delimited blocks before the user's text, seen here in the request the real Gemini CLI sends its scripted model;
more than the bound is a 422 and nothing runs."""

from __future__ import annotations

import json

import pytest
from runners import scripted_runner

pytestmark = pytest.mark.real_cli


async def test_context_and_state_reach_the_model(tmp_path, monkeypatch, isolated_network):
    async with scripted_runner("gemini-cli", tmp_path, monkeypatch) as runner:
        client, server = runner.harness.client, runner.server
        body = {**runner.harness.run_body("t1", "NOTOOL what do you know?"),
                "context": [{"description": "open file", "value": "src/app.py line 12"}],
                "state": {"ticket": "PROJ-42", "step": 3}}
        async with client.stream("POST", "/run", json=body) as response:
            assert response.status_code == 200
            await response.aread()
        sent = json.dumps(server.requests[-1].body)
        assert "<context>\\n- open file: src/app.py line 12\\n</context>" in sent
        assert '<state>\\n{\\"ticket\\": \\"PROJ-42\\", \\"step\\": 3}\\n</state>' in sent
        assert sent.index("<context>") < sent.index("what do you know?")

        as_object = {**runner.harness.run_body("t2", "NOTOOL and now?"), "context": {"workflow": "triage"}}
        async with client.stream("POST", "/run", json=as_object) as response:
            assert response.status_code == 200
            await response.aread()
        assert "- workflow: triage" in json.dumps(server.requests[-1].body)

        before = len(server.requests)
        huge = {**runner.harness.run_body("t3", "NOTOOL hi"), "state": {"blob": "x" * 70_000}}
        refused = await client.post("/run", json=huge)
        assert refused.status_code == 422 and refused.json()["code"] == "CONTEXT_TOO_LARGE"
        assert len(server.requests) == before and runner.harness.app.runtime.runs.thread("t3") is None
