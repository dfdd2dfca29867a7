"""``GET /capabilities`` is AG-UI 1.0 ``AgentCapabilities`` plus exactly the platform's nine fields, for all three
runners. Both pydantic and zod accept unknown keys, so validating alone would pass a clash: the test also walks every
nested object and requires each key to be one its AG-UI model defines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import AgentCapabilities
from harness import RunnerHarness
from pydantic import BaseModel
from runner_kits import make_settings

from ambient_runner.api.capabilities import PLATFORM_FIELDS, capabilities_body
from ambient_runner.app import create_app
from ambient_runner.bridges.registry import create_bridge
from tests.support.process_bridge import FakeCliBridge

EXPECTED_INPUT = {  # what each CLI takes as message parts
    "claude": {"image": True, "pdf": True},
    "codex-sdk": {"image": True, "pdf": False},
    "gemini-cli": {"image": True, "pdf": True},
}


def foreign_keys(value: dict[str, Any], model: type[BaseModel], where: str = "") -> list[str]:
    """The keys of ``value`` (and of its nested objects) that ``model`` does not define; ``custom`` is open."""
    fields = {(info.alias or name): info for name, info in model.model_fields.items()}
    found = []
    for key, item in value.items():
        if key not in fields:
            found.append(f"{where}{key}")
            continue
        annotation = fields[key].annotation
        nested = next((t for t in getattr(annotation, "__args__", (annotation,))
                       if isinstance(t, type) and issubclass(t, BaseModel)), None)
        if nested is not None and isinstance(item, dict):
            found += foreign_keys(item, nested, f"{where}{key}.")
    return found


@pytest.mark.parametrize("runner_type", sorted(EXPECTED_INPUT))
def test_each_runners_capabilities_are_agent_capabilities(runner_type: str, tmp_path: Path) -> None:
    settings = make_settings(runner_type, tmp_path, session_id="session-1")
    paths = create_app(settings).openapi()["paths"]
    body = capabilities_body(create_bridge(settings).capabilities(), settings, paths)

    extras = set(body) - {info.alias or name for name, info in AgentCapabilities.model_fields.items()}
    assert extras == set(PLATFORM_FIELDS)
    agui = {k: v for k, v in body.items() if k not in PLATFORM_FIELDS}
    AgentCapabilities.model_validate(agui)
    assert foreign_keys(agui, AgentCapabilities) == []

    assert body["identity"]["type"] == body["framework"]
    assert body["custom"]["runnerType"] == runner_type and body["custom"]["protocolVersion"] == "1.0"
    multimodal = body["multimodal"]["input"]
    assert {k: multimodal[k] for k in ("image", "pdf")} == EXPECTED_INPUT[runner_type]
    assert body["custom"]["attachments"]["maxBytes"] == 20 * 1024 * 1024
    assert "image/png" in body["custom"]["attachments"]["mimeTypes"]
    assert body["reasoning"] == {"supported": True, "streaming": True}  # Gemini: its ACP transport (the default)
    assert body["multiAgent"]["supported"] is (runner_type == "claude")
    assert body["state"]["snapshots"] is (runner_type == "codex-sdk")
    assert body["session_id"] == "session-1" and body["mcp"] is True


async def test_the_endpoint_answers_the_same_body(tmp_path: Path) -> None:
    bridge = FakeCliBridge(tmp_path)
    async with RunnerHarness(bridge) as runner:
        body = (await runner.client.get("/capabilities")).json()
        paths = runner.app.openapi()["paths"]
        assert body == capabilities_body(bridge.capabilities(), runner.settings, paths)
    AgentCapabilities.model_validate({k: v for k, v in body.items() if k not in PLATFORM_FIELDS})
    assert body["custom"]["runnerType"] == "fake-cli" and body["framework"] == "fake-cli"
