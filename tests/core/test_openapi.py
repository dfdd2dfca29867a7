"""``/openapi.json`` is written from the same route table the app serves: every route in it with its methods, path
and query parameters, bodies where a call takes one, an operationId each, and the platform's calls all there."""

from __future__ import annotations

from pathlib import Path

from harness import RunnerHarness
from starlette.routing import Route

from tests.support.process_bridge import FakeCliBridge

PLATFORM_CALLS = {  # ../shared/research/platform-backend-contract.md
    ("post", "/"), ("post", "/run"), ("post", "/interrupt"), ("get", "/events/{thread_id}"), ("get", "/health"),
    ("get", "/ready"), ("get", "/capabilities"), ("get", "/mcp/status"), ("post", "/model"), ("post", "/feedback"),
    ("get", "/content/list"), ("get", "/content/file"), ("post", "/content/write"), ("delete", "/content/delete"),
    ("get", "/content/git-status"), ("get", "/content/git-list-branches"), ("post", "/content/git-configure-remote"),
    ("get", "/content/workflow-metadata"), ("post", "/repos/add"), ("post", "/repos/remove"),
    ("get", "/repos/status"), ("post", "/workflow"), ("get", "/tasks"), ("get", "/tasks/{task_id}/output"),
    ("post", "/tasks/{task_id}/stop")}


async def test_the_document_lists_what_the_app_serves(tmp_path: Path) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        document = (await runner.client.get("/openapi.json")).json()
        served = {(method.lower(), route.path.replace(":path}", "}")) for route in runner.app.routes
                  if isinstance(route, Route) and route.path != "/openapi.json"
                  for method in route.methods or () if method != "HEAD"}

    assert document["openapi"].startswith("3.") and document["info"]["title"] == "ambient-runner"
    listed = {(method, path) for path, methods in document["paths"].items() for method in methods}
    assert listed == served and PLATFORM_CALLS <= listed
    operations = [op for methods in document["paths"].values() for op in methods.values()]
    assert len({op["operationId"] for op in operations}) == len(operations)
    assert all(op["summary"] and "200" in op["responses"] for op in operations)
    events = document["paths"]["/events/{thread_id}"]["get"]
    assert [(p["name"], p["in"]) for p in events["parameters"]] == [("thread_id", "path"), ("after", "query")]
    run_body = document["paths"]["/run"]["post"]["requestBody"]
    assert run_body["required"] and run_body["content"]["application/json"]["schema"]["required"] == [
        "threadId", "messages"]
    assert "text/event-stream" in document["paths"]["/run"]["post"]["responses"]["200"]["content"]
