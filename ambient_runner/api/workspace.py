"""The platform's workspace calls: ``/content/*`` (Files tab, git panel, workflow picker), ``/repos/*``,
``/workflow``. Every path stays inside ``WORKSPACE_PATH``; bad input is a JSON 4xx; a git failure carries git's own
message (never a token)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import mimetypes
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ambient_runner.api.errors import ApiError
from ambient_runner.api.routing import Routes
from ambient_runner.api.run_input import parse_json, read_body
from ambient_runner.workspace import files
from ambient_runner.workspace.git import GitError, GitTokens
from ambient_runner.workspace.paths import LinkRefused, PathRefused, Workspace
from ambient_runner.workspace.repos import (
    RepoConflict,
    Repositories,
    UnknownRepo,
    configure_remote,
    git_status,
    list_branches,
)
from ambient_runner.workspace.workflows import Workflows, WorkflowSpec

routes = Routes()
Body = TypeVar("Body", bound=BaseModel)


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class WriteBody(_Body):
    path: str = Field(min_length=1)
    content: str
    encoding: Literal["utf8", "utf-8", "base64"] = "utf8"


class PathBody(_Body):
    path: str = Field(min_length=1)


class RemoteBody(_Body):
    path: str = ""
    remote_url: str = Field(alias="remoteUrl", min_length=1)
    branch: str = "main"


class RepoBody(_Body):
    url: str = Field(min_length=1)
    branch: str | None = None
    name: str | None = None


class NameBody(_Body):
    name: str = Field(min_length=1)


class WorkflowBody(_Body):
    git_url: str = Field(alias="gitUrl", min_length=1)
    branch: str = "main"
    path: str = ""


async def parse_body(request: Request, model: type[Body], limit: int = 1024 * 1024) -> Body:
    data = parse_json(await read_body(request, limit=limit))
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [{"loc": [str(p) for p in e["loc"]], "msg": e["msg"]} for e in exc.errors()[:20]]
        raise ApiError(422, "INVALID_REQUEST", "the body is not valid for this call", problems=problems) from None


def _workspace(request: Request) -> Workspace:
    return request.app.state.workspace


async def _guarded(call: Any, *args: Any, git_status_code: int = 422) -> Any:
    """Run a workspace operation; its failures as the API's JSON errors."""
    try:
        result = call(*args)
        return await result if asyncio.iscoroutine(result) else result
    except LinkRefused as exc:
        raise ApiError(400, "PATH_REFUSED", str(exc)) from None
    except PathRefused as exc:
        raise ApiError(400, "INVALID_PATH", str(exc)) from None
    except (files.NotFound, UnknownRepo) as exc:
        raise ApiError(404, "NOT_FOUND", str(exc)) from None
    except files.TooLarge as exc:
        raise ApiError(413, "FILE_TOO_LARGE", str(exc)) from None
    except RepoConflict as exc:
        raise ApiError(409, "REPO_EXISTS", str(exc)) from None
    except GitError as exc:
        raise ApiError(git_status_code, "GIT_FAILED", str(exc)) from None
    except OSError as exc:
        raise ApiError(409, "FILE_SYSTEM", f"{exc.strerror or exc}") from None
    except (ValueError, UnicodeError) as exc:  # a value the OS or git cannot take (a NUL in an argument, ...)
        raise ApiError(400, "INVALID_REQUEST", str(exc)[:300]) from None


# ----- files -----------------------------------------------------------------------------------------------
@routes.get("/content/list", "The entries of a workspace folder", query=("path",))
async def content_list(request: Request) -> JSONResponse:
    path = request.query_params.get("path", "")
    items = await _guarded(asyncio.to_thread, files.list_dir, _workspace(request), path)
    return JSONResponse({"items": items})


@routes.get("/content/file", "A workspace file's bytes", query=("path",), media_type="application/octet-stream")
async def content_file(request: Request) -> Response:
    path = request.query_params.get("path", "")
    limit = request.app.state.settings.runner_max_file_bytes
    name, data = await _guarded(asyncio.to_thread, files.read_file, _workspace(request), path, limit)
    media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return Response(data, media_type=media_type)


@routes.post("/content/write", "Write a workspace file")
async def content_write(request: Request) -> JSONResponse:
    limit = request.app.state.settings.runner_max_file_bytes
    body = await parse_body(request, WriteBody, limit=limit * 4 // 3 + 64 * 1024)
    if body.encoding == "base64":
        try:
            data = base64.b64decode(body.content, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(422, "INVALID_REQUEST", "content is not valid base64") from None
    else:
        data = body.content.encode("utf-8", "surrogatepass")
    if len(data) > limit:
        raise ApiError(413, "FILE_TOO_LARGE", f"the content is more than {limit} bytes (RUNNER_MAX_FILE_BYTES)")
    shown = await _guarded(asyncio.to_thread, files.write_file, _workspace(request), body.path, data)
    return JSONResponse({"message": "ok", "path": shown, "size": len(data)})


@routes.delete("/content/delete", "Delete a workspace file")
async def content_delete(request: Request) -> JSONResponse:
    body = await parse_body(request, PathBody)
    await _guarded(asyncio.to_thread, files.delete_file, _workspace(request), body.path)
    return JSONResponse({"message": "file deleted successfully"})


# ----- git -------------------------------------------------------------------------------------------------
@routes.get("/content/git-status", "A repository's git status", query=("path",))
async def content_git_status(request: Request) -> JSONResponse:
    path = request.query_params.get("path", "")
    return JSONResponse(await _guarded(git_status, _workspace(request), path))


@routes.get("/content/git-list-branches", "A repository's remote branches", query=("path",))
async def content_git_branches(request: Request) -> JSONResponse:
    path = request.query_params.get("path", "artifacts")
    return JSONResponse({"branches": await _guarded(list_branches, _workspace(request), path)})


@routes.post("/content/git-configure-remote", "Set a repository's remote")
async def content_git_configure_remote(request: Request) -> JSONResponse:
    body = await parse_body(request, RemoteBody)
    tokens = GitTokens.from_headers(request.headers)
    answer = await _guarded(configure_remote, _workspace(request), body.path, body.remote_url, body.branch or "main",
                            tokens)
    return JSONResponse(answer)


@routes.get("/content/workflow-metadata", "The active workflow's commands and agents")
async def workflow_metadata(request: Request) -> JSONResponse:
    workflows: Workflows = request.app.state.workflows
    return JSONResponse(await _guarded(asyncio.to_thread, workflows.metadata))


# ----- repositories and workflows --------------------------------------------------------------------------
@routes.post("/repos/add", "Clone a repository into the workspace")
async def repos_add(request: Request) -> JSONResponse:
    body = await parse_body(request, RepoBody)
    repos: Repositories = request.app.state.repos
    answer = await _guarded(repos.add, body.url, body.branch, body.name, GitTokens.from_headers(request.headers),
                            git_status_code=502)
    return JSONResponse(answer)


@routes.post("/repos/remove", "Remove a repository from the workspace")
async def repos_remove(request: Request) -> JSONResponse:
    body = await parse_body(request, NameBody)
    repos: Repositories = request.app.state.repos
    await _guarded(repos.remove, body.name)
    return JSONResponse({"message": "removed", "name": body.name})


@routes.get("/repos/status", "The workspace's repositories")
async def repos_status(request: Request) -> JSONResponse:
    repos: Repositories = request.app.state.repos
    return JSONResponse({"repos": await _guarded(repos.status)})


@routes.post("/workflow", "Select the active workflow")
async def select_workflow(request: Request) -> JSONResponse:
    body = await parse_body(request, WorkflowBody)
    workflows: Workflows = request.app.state.workflows
    spec = WorkflowSpec(body.git_url.strip(), body.branch.strip() or "main", body.path.strip().strip("/"))
    folder, changed = await _guarded(workflows.select, spec, GitTokens.from_headers(request.headers),
                                     git_status_code=502)
    if changed:
        await request.app.state.on_workflow_change()
    return JSONResponse({"message": "Workflow updated" if changed else "Workflow already active",
                         "gitUrl": spec.git_url, "branch": spec.branch, "path": spec.path,
                         "directory": _workspace(request).relative(folder)})
