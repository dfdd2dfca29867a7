"""The Files tab's calls on the real service: write (utf8 and base64, parents made, atomic), list, read (with a
Content-Type, 404, 413), delete; malformed bodies are 422 JSON; writes while a run streams are fine."""

from __future__ import annotations

import asyncio
import base64

from harness import RunnerHarness, parse_sse
from process_bridge import FakeCliBridge, script


async def test_write_list_read_delete(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path), runner_max_file_bytes=1024) as runner:
        client, workspace = runner.client, runner.settings.workspace_path
        wrote = await client.post("/content/write", json={"path": "/notes/today.md", "content": "# hello\n"})
        assert wrote.status_code == 200 and wrote.json()["path"] == "/notes/today.md"
        png = bytes(range(256))
        binary = await client.post("/content/write", json={"path": "notes/pixel.png", "encoding": "base64",
                                                           "content": base64.b64encode(png).decode()})
        assert binary.status_code == 200
        assert (workspace / "notes" / "pixel.png").read_bytes() == png
        assert not [p for p in (workspace / "notes").iterdir() if p.name.endswith(".tmp")]  # no temporary left

        listed = (await client.get("/content/list", params={"path": "/notes"})).json()["items"]
        assert [(i["name"], i["path"], i["isDir"], i["size"]) for i in listed] == [
            ("pixel.png", "/notes/pixel.png", False, 256), ("today.md", "/notes/today.md", False, 8)]
        assert listed[0]["modifiedAt"].endswith("Z")
        root = (await client.get("/content/list")).json()["items"]
        assert {"name": "notes", "isDir": True} in [{"name": i["name"], "isDir": i["isDir"]} for i in root]

        text = await client.get("/content/file", params={"path": "/notes/today.md"})
        assert text.status_code == 200 and text.content == b"# hello\n"
        assert text.headers["content-type"].startswith("text/markdown")
        image = await client.get("/content/file", params={"path": "/notes/pixel.png"})
        assert image.content == png and image.headers["content-type"] == "image/png"

        (workspace / "big.bin").write_bytes(b"x" * 2048)
        too_big = await client.get("/content/file", params={"path": "/big.bin"})
        assert too_big.status_code == 413 and too_big.json()["code"] == "FILE_TOO_LARGE"
        over = await client.post("/content/write", json={"path": "/big2.bin", "content": "y" * 2000})
        assert over.status_code == 413 and not (workspace / "big2.bin").exists()

        deleted = await client.request("DELETE", "/content/delete", json={"path": "/notes/today.md"})
        assert deleted.status_code == 200 and not (workspace / "notes" / "today.md").exists()
        for method, path, kwargs in [("GET", "/content/file", {"params": {"path": "/notes/today.md"}}),
                                     ("DELETE", "/content/delete", {"json": {"path": "/notes/today.md"}}),
                                     ("GET", "/content/list", {"params": {"path": "/nowhere"}})]:
            missing = await client.request(method, path, **kwargs)
            assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND", path
        directory = await client.request("DELETE", "/content/delete", json={"path": "/notes"})
        assert directory.status_code == 400 and (workspace / "notes").is_dir()
        workspace_itself = await client.get("/content/file", params={"path": "/"})
        assert workspace_itself.status_code == 400

        for body in [{}, {"path": "/a.txt"}, {"path": "/a.txt", "content": 7}, {"path": "", "content": "x"},
                     {"path": "/a.txt", "content": "%%%", "encoding": "base64"},
                     {"path": "/a.txt", "content": "x", "encoding": "latin-1"}, [1, 2]]:
            refused = await client.post("/content/write", json=body)
            assert refused.status_code == 422 and refused.json()["code"] == "INVALID_REQUEST", body
        bad_json = await client.post("/content/write", content=b"{nope")
        assert bad_json.status_code == 422 and bad_json.json()["code"] == "INVALID_JSON"
        assert not (workspace / "a.txt").exists()


async def test_writes_while_a_run_streams(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        client = runner.client
        body = runner.run_body("t1", script({"text": "working"}, {"sleep": 30}))
        async with client.stream("POST", "/run", json=body) as response:
            async for _, event in parse_sse(response.aiter_lines()):
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    wrote = await client.post("/content/write", json={"path": "/during.txt", "content": "x"})
                    assert wrote.status_code == 200
                    await asyncio.wait_for(runner.interrupt("t1"), 30)
        assert (runner.settings.workspace_path / "during.txt").read_text() == "x"
