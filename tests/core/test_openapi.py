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


def served(routes: list) -> list[Route]:
    """The app's routes, those of the routers it includes too."""
    found: list[Route] = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        found += served(inner.routes) if inner is not None else [route] if isinstance(route, Route) else []
    return found


def resolved(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


BODIES = {("post", "/run"), ("post", "/"), ("post", "/interrupt"), ("post", "/model"), ("post", "/feedback"),
          ("post", "/content/write"), ("delete", "/content/delete"), ("post", "/content/git-configure-remote"),
          ("post", "/repos/add"), ("post", "/repos/remove"), ("post", "/workflow")}


async def test_the_document_lists_what_the_app_serves(tmp_path: Path) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        document = (await runner.client.get("/openapi.json")).json()
        routes = {(method.lower(), route.path.replace(":path}", "}")) for route in served(runner.app.routes)
                  if route.path != "/openapi.json" for method in route.methods or () if method != "HEAD"}

    assert document["openapi"].startswith("3.") and document["info"]["title"] == "ambient-runner"
    listed = {(method, path) for path, methods in document["paths"].items() for method in methods}
    assert listed == routes and PLATFORM_CALLS <= listed
    operations = {(method, path): op for path, methods in document["paths"].items() for method, op in methods.items()}
    assert len({op["operationId"] for op in operations.values()}) == len(operations)
    assert all(op["summary"] and "200" in op["responses"] for op in operations.values())
    with_body = {key for key, op in operations.items() if "requestBody" in op}
    assert with_body == BODIES, with_body ^ BODIES
    error = resolved(document, operations[("post", "/model")]["responses"]["default"]["content"]["application/json"]
                     ["schema"])
    assert error["required"] == ["error", "code"]  # the platform's ApiError
    schemes = document["components"]["securitySchemes"]
    assert {s["type"] for s in schemes.values()} == {"apiKey", "http"}
    assert all(op.get("security") for key, op in operations.items() if key != ("get", "/health"))
    assert "security" not in operations[("get", "/health")]
    events = operations[("get", "/events/{thread_id}")]
    assert [(p["name"], p["in"]) for p in events["parameters"]] == [
        ("thread_id", "path"), ("after", "query"), ("Last-Event-ID", "header")]
    run_body = operations[("post", "/run")]["requestBody"]
    assert run_body["required"] and resolved(document, run_body["content"]["application/json"]["schema"])[
        "required"] == ["threadId", "messages"]
    assert "text/event-stream" in operations[("post", "/run")]["responses"]["200"]["content"]
    write = resolved(document, operations[("post", "/content/write")]["requestBody"]["content"]["application/json"][
        "schema"])
    assert write["required"] == ["path", "content"] and write["properties"]["encoding"]["enum"] == [
        "utf8", "utf-8", "base64"]
