"""The image and document parts of a run, through the real service with the fake CLI: what is taken reaches the
bridge as checked files outside the workspace, removed when the run ends; everything else is a 422 naming the part,
with nothing written and nothing run. Fetching http(s) urls: its address policy, and the fetch itself against a
server on 127.0.0.1 (the policy is what refuses loopback; the fetch is tested with the policy lifted)."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from harness import RunnerHarness
from http_server import serving
from media import data_part, pdf, png, url_part
from process_bridge import FakeCliBridge, script
from runners import wait_for

from ambient_runner.runs.url_fetch import FetchRefused, fetch_url, public_address

TEXT = {"type": "text", "text": script({"text": "seen"})}


def run_body(parts: list[dict]) -> dict:
    return {"threadId": "t-media", "messages": [{"id": "u1", "role": "user", "content": parts}]}


async def test_taken_parts_reach_the_bridge_as_files_outside_the_workspace(tmp_path: Path) -> None:
    bridge = FakeCliBridge(tmp_path)
    attachments_dir = tmp_path / "attachments"
    async with RunnerHarness(bridge, runner_attachments_dir=attachments_dir) as runner:
        workspace = runner.settings.workspace_path
        (workspace / "docs").mkdir()
        (workspace / "docs" / "spec.pdf").write_bytes(pdf())
        events = await runner.run("t-media", [TEXT, data_part("image", "image/png", png()),
                                              url_part("document", f"file://{workspace / 'docs' / 'spec.pdf'}")])
    assert events[-1]["type"] == "RUN_FINISHED"
    (turn,) = bridge.turns
    assert [(a.part, a.kind, a.mime_type) for a in turn.attachments] == [
        ("messages[0].content[1]", "image", "image/png"), ("messages[0].content[2]", "document", "application/pdf")]
    (files,) = bridge.attachment_files
    assert list(files.values()) == [png(), pdf()]
    assert all(Path(path).parent.parent == attachments_dir for path in files)
    assert list(attachments_dir.iterdir()) == []  # removed once the run ended
    assert turn.prompt == script({"text": "seen"})  # the text alone: the parts are not described in it


async def test_a_message_of_an_image_alone_is_a_run(tmp_path: Path) -> None:
    bridge = FakeCliBridge(tmp_path)
    async with RunnerHarness(bridge, check=False) as runner:
        response = await runner.client.post("/run", json=run_body([data_part("image", "image/png", png())]))
        await response.aread()
    assert response.status_code == 200
    assert bridge.turns[0].prompt == "See the attached files." and len(bridge.turns[0].attachments) == 1


def refusals(workspace: Path, state_dir: Path) -> list[tuple[dict, str]]:
    outside = workspace.parent / "outside.png"
    outside.write_bytes(png())
    (workspace / "link.png").symlink_to(outside)
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "shot.png").write_bytes(png())
    big = png(width=200, height=200, rgb=(1, 2, 3)) + b"\0" * 5000
    return [
        (data_part("image", "image/png", big), "larger than 4096 bytes (RUNNER_MAX_ATTACHMENT_BYTES)"),
        (data_part("image", "image/bmp", b"BM" + b"\0" * 60), "image/bmp is not taken by this runner as image "
                                                              "(it takes: image/jpeg, image/png)"),
        (data_part("image", "application/pdf", pdf()), "application/pdf is not taken by this runner as image"),
        (data_part("image", "image/png", pdf()), "the bytes are not image/png"),
        ({"type": "image", "source": {"type": "data", "mimeType": "image/png", "value": "not base64!"}},
         "the data is not valid base64"),
        (url_part("image", f"file://{outside}"), "the path leaves the workspace"),
        (url_part("image", f"file://{workspace / 'link.png'}"), "the path leaves the workspace"),
        (url_part("image", f"file://{state_dir / 'shot.png'}"), "the path leaves the workspace"),
        (url_part("image", f"file://{workspace / 'missing.png'}"), "no such file in the workspace"),
        (url_part("image", "file://elsewhere/x.png"), "a file:// url names no host"),
        (url_part("image", "https://example.com/cat.png"), "fetching urls is off on this runner"),
        (url_part("image", "ftp://example.com/cat.png"), "url scheme 'ftp' is not taken"),
        (url_part("image", "http://[abc/x.png", "image/png"), "the url is not valid"),
        (url_part("image", f"file://{workspace}/a%00.png"), "the path contains a NUL"),
        (data_part("document", "image/png", png()), "image/png is not taken by this runner as document (it takes: "
                                                    "application/pdf)"),
        ({"type": "image", "source": {"type": "file", "value": "file-abc123", "provider": "openai"}},
         "a file source is a provider's handle, which the runner must not fetch"),
        ({"type": "audio", "source": {"type": "data", "mimeType": "audio/wav", "value": "UklGRg=="}},
         "audio parts are not taken by this runner"),
    ]


async def test_every_refused_part_is_a_422_naming_it_and_nothing_runs(tmp_path: Path) -> None:
    bridge = FakeCliBridge(tmp_path)
    attachments_dir = tmp_path / "attachments"
    async with RunnerHarness(bridge, runner_attachments_dir=attachments_dir, runner_max_attachment_bytes=4096,
                             runner_state_root=tmp_path / "state") as runner:
        cases = refusals(runner.settings.workspace_path, runner.settings.state_dir)
        for part, reason in cases:
            # A good part first: it is written before the bad one is seen, and must be removed again.
            body = run_body([TEXT, data_part("image", "image/png", png()), part])
            response = await runner.client.post("/run", json=body)
            assert response.status_code == 422, (reason, response.text)
            error = response.json()
            assert error["code"] == "INVALID_ATTACHMENT", error
            assert error["details"] == {"part": "messages[0].content[2]"}
            assert error["error"].startswith("messages[0].content[2]: ") and reason in error["error"], (
                reason, error["error"])
            assert not attachments_dir.exists() or list(attachments_dir.iterdir()) == []
    assert bridge.turns == []


async def test_a_url_to_this_host_is_refused_even_with_fetching_on(tmp_path: Path) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path), runner_fetch_urls=True) as runner:
        for url in ("http://127.0.0.1:9/x.png", "http://localhost/x.png", "http://[::1]/x.png",
                    "http://169.254.169.254/latest/meta-data", "http://user:pw@example.com/x.png"):
            response = await runner.client.post("/run", json=run_body([TEXT, url_part("image", url, "image/png")]))
            assert response.status_code == 422, url
            message = response.json()["error"]
            assert "private, loopback or link-local" in message or "credentials in it" in message, message


async def test_a_retried_run_id_never_touches_the_running_runs_files(tmp_path: Path) -> None:
    bridge = FakeCliBridge(tmp_path)
    async with RunnerHarness(bridge, runner_attachments_dir=tmp_path / "attachments") as runner:
        body = {**run_body([{"type": "text", "text": script({"text": "a"}, {"sleep": 30})},
                            data_part("image", "image/png", png())]), "runId": "same-run"}
        async with runner.client.stream("POST", "/run", json=body) as first:
            assert first.status_code == 200
            await wait_for(lambda: bridge.turns, 30, "the first run's turn")
            (written,) = bridge.turns[0].attachments
            again = await runner.client.post("/run", json=body)  # the same thread and run id, still running
            assert again.status_code == 409
            assert written.path.read_bytes() == png()  # the running run's file is untouched
            await runner.client.post("/interrupt", json={"threadId": "t-media"})
            await first.aread()


@pytest.mark.parametrize(("address", "public"), [
    ("127.0.0.1", False), ("10.1.2.3", False), ("192.168.0.10", False), ("172.16.5.4", False),
    ("169.254.169.254", False), ("100.64.0.1", False), ("0.0.0.0", False), ("224.0.0.1", False),
    ("::1", False), ("fd00::1", False), ("fe80::1%eth0", False), ("::ffff:127.0.0.1", False),
    ("64:ff9b::7f00:1", False), ("2002:7f00:1::", False), ("::7f00:1", False), ("not an address", False),
    ("8.8.8.8", True), ("2606:4700:4700::1111", True), ("::ffff:8.8.8.8", True),
])
def test_the_address_policy(address: str, public: bool) -> None:
    assert public_address(address) is public


@pytest.fixture
def file_server() -> Iterator[str]:
    body = png()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            if self.path == "/moved":
                self.send_response(302)
                self.send_header("Location", "http://169.254.169.254/")
                self.end_headers()
                return
            payload = body * 400 if self.path == "/big" else body
            self.send_response(200)
            self.send_header("Content-Type", "image/png; charset=binary")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url


async def test_the_fetch_is_bounded_and_follows_no_redirect(file_server: str) -> None:
    def anywhere(address: str) -> bool:
        return True

    data, content_type = await fetch_url(f"{file_server}/cat.png", 10_000, anywhere)
    assert data == png() and content_type == "image/png"
    with pytest.raises(FetchRefused, match="larger than 10000 bytes"):
        await fetch_url(f"{file_server}/big", 10_000, anywhere)
    with pytest.raises(FetchRefused, match="redirects are not followed"):
        await fetch_url(f"{file_server}/moved", 10_000, anywhere)
    with pytest.raises(FetchRefused, match="private, loopback or link-local"):
        await fetch_url(f"{file_server}/cat.png", 10_000)  # the default policy: loopback is never fetched
    # A name is resolved once and the checked address connected to, its Host kept.
    port = file_server.rsplit(":", 1)[1]
    data, _ = await fetch_url(f"http://localhost:{port}/cat.png", 10_000, anywhere)
    assert data == png()
    for bad, reason in ((f"http://localhost:{port}/x", "private, loopback"), ("http://localhost:99999/x", "port"),
                        ("http://" + "a" * 70 + ".example/x", "cannot resolve")):
        with pytest.raises(FetchRefused, match=reason):
            await fetch_url(bad, 10_000)
