"""Images and documents of a user message reach the model, with each real CLI on its scripted model: the bytes in
the model request are the bytes sent (a data source and a file:// source inside the workspace), in each CLI's own
way (Claude: content blocks; Codex: image inputs; Gemini: files named with @ under the run's attachment dir)."""

from __future__ import annotations

from pathlib import Path

import pytest
from media import data_part, pdf, png, received_media, url_part
from runner_kits import RUNNERS, clean_credentials, runner_kit

pytestmark = [pytest.mark.real_cli, pytest.mark.parametrize("runner_type", RUNNERS)]

TAKES_PDF = {"claude": True, "gemini-cli": True, "codex-sdk": False}  # Codex's turn input has no document type


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_credentials(monkeypatch)


async def test_a_png_and_a_pdf_reach_the_model_request(runner_type: str, tmp_path: Path,
                                                       isolated_network: None) -> None:
    image, second = png(), png(rgb=(10, 200, 10))
    document, filed = pdf("SENT AS DATA"), pdf("READ FROM THE WORKSPACE")
    attachments_dir = tmp_path / "attachments"
    async with runner_kit(runner_type, tmp_path, runner_attachments_dir=attachments_dir) as kit:
        workspace = kit.settings.workspace_path
        (workspace / "shot.png").write_bytes(second)
        (workspace / "spec.pdf").write_bytes(filed)
        parts = [{"type": "text", "text": "NOTOOL what is in these?"}, data_part("image", "image/png", image),
                 url_part("image", f"file://{workspace / 'shot.png'}")]
        if TAKES_PDF[runner_type]:
            parts += [data_part("document", "application/pdf", document),
                      url_part("document", f"file://{workspace / 'spec.pdf'}")]
        events = await kit.runner.run("t-media", parts)
        requests = kit.model_requests()
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    received = [media for request in requests for media in received_media(request.body)]
    expected = [("image/png", image), ("image/png", second)]
    if TAKES_PDF[runner_type]:
        expected += [("application/pdf", document), ("application/pdf", filed)]
    assert sorted(expected) == sorted(set(received)), [(m, len(b)) for m, b in received]
    assert list(attachments_dir.iterdir()) == []  # the run's files are removed once it has ended
    assert sorted(p.name for p in workspace.iterdir()) == ["shot.png", "spec.pdf"]  # nothing written there


async def test_a_type_the_cli_does_not_take_is_a_422_naming_the_part(runner_type: str, tmp_path: Path,
                                                                     isolated_network: None) -> None:
    async with runner_kit(runner_type, tmp_path) as kit:
        refused_type = "audio/wav" if TAKES_PDF[runner_type] else "application/pdf"
        kind = "document" if refused_type == "application/pdf" else "image"
        body = kit.runner.run_body("t-media", [{"type": "text", "text": "NOTOOL look"},
                                               data_part(kind, refused_type, b"RIFF0000WAVE")])
        response = await kit.runner.client.post("/run", json=body)
    assert response.status_code == 422
    error = response.json()
    assert error["code"] == "INVALID_ATTACHMENT" and error["details"]["part"] == "messages[0].content[1]"
    assert refused_type in error["error"]
