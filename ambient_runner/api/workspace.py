"""The platform's workspace calls: ``/content/*`` (Files tab, git panel, workflow picker), ``/repos/*``,
``/workflow``. Every path stays inside ``WORKSPACE_PATH``; bad input is a JSON 4xx; a git failure carries git's own
message (never a token)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import mimetypes
from collections.abc import Awaitable, Mapping
from typing import Annotated, Literal, TypeVar

from fastapi import Header
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.api.errors import ApiError
from ambient_runner.api.routing import (
    Repos,
    Runs,
    RuntimeState,
    Settings,
    WorkflowSet,
    WorkspaceRoot,
    body_rules,
    router,
)
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace import files
from ambient_runner.workspace.git import GitError, GitTokens
from ambient_runner.workspace.paths import PathRefused
from ambient_runner.workspace.repos import RepoConflict, UnknownRepo, configure_remote, git_status, list_branches
from ambient_runner.workspace.workflows import WorkflowSpec

routes = router()
GitHubToken = Annotated[str, Header(alias="X-GitHub-Token", description="for this one call's https remote")]
GitLabToken = Annotated[str, Header(alias="X-GitLab-Token", description="for this one call's https remote")]
T = TypeVar("T")  # what a guarded workspace operation answers


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


def _tokens(github: str, gitlab: str) -> GitTokens:
    return GitTokens(github.strip(), gitlab.strip())


def _write_limit(settings: RunnerSettings) -> int:
    """A file of RUNNER_MAX_FILE_BYTES, base64-encoded, and the rest of the body."""
    return settings.runner_max_file_bytes * 4 // 3 + 64 * 1024


async def _guarded(work: Awaitable[T], *, git_status_code: int = 422) -> T:
    """Await a workspace operation; its failures as the API's JSON errors (a refused path, a file or repository not
    found or too large, a repository that exists: their codes' statuses)."""
    try:
        return await work
    except (PathRefused, files.NotFound, UnknownRepo, files.TooLarge, RepoConflict):
        raise
    except GitError as exc:
        raise ApiError(git_status_code, exc.code, exc.message) from None
    except OSError as exc:
        raise ApiError(409, ErrorCode.FILE_SYSTEM, f"{exc.strerror or exc}") from None
    except (ValueError, UnicodeError) as exc:  # a value the OS or git cannot take (a NUL in an argument, ...)
        raise ApiError(400, ErrorCode.INVALID_REQUEST, str(exc)[:300]) from None


# ----- files -----------------------------------------------------------------------------------------------
@routes.get("/content/list", summary="The entries of a workspace folder")
async def content_list(workspace: WorkspaceRoot, path: str = "") -> Mapping[str, object]:
    return {"items": await _guarded(asyncio.to_thread(files.list_dir, workspace, path))}


@routes.get("/content/file", summary="A workspace file's bytes", response_class=Response,
            responses={200: {"content": {"application/octet-stream": {}}, "description": "the file's bytes"}})
async def content_file(workspace: WorkspaceRoot, settings: Settings, path: str = "") -> Response:
    limit = settings.runner_max_file_bytes
    name, data = await _guarded(asyncio.to_thread(files.read_file, workspace, path, limit))
    return Response(data, media_type=mimetypes.guess_type(name)[0] or "application/octet-stream")


@routes.post("/content/write", summary="Write a workspace file")
@body_rules(limit=_write_limit)
async def content_write(body: WriteBody, workspace: WorkspaceRoot, settings: Settings) -> Mapping[str, object]:
    limit = settings.runner_max_file_bytes
    if body.encoding == "base64":
        try:
            data = base64.b64decode(body.content, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(422, ErrorCode.INVALID_REQUEST, "content is not valid base64") from None
    else:
        data = body.content.encode("utf-8")
    if len(data) > limit:
        raise ApiError(413, ErrorCode.FILE_TOO_LARGE, f"the content is more than {limit} bytes (RUNNER_MAX_FILE_BYTES)")
    shown = await _guarded(asyncio.to_thread(files.write_file, workspace, body.path, data))
    return {"message": "ok", "path": shown, "size": len(data)}


@routes.delete("/content/delete", summary="Delete a workspace file")
async def content_delete(body: PathBody, workspace: WorkspaceRoot) -> Mapping[str, object]:
    await _guarded(asyncio.to_thread(files.delete_file, workspace, body.path))
    return {"message": "file deleted successfully"}


# ----- git -------------------------------------------------------------------------------------------------
@routes.get("/content/git-status", summary="A repository's git status")
async def content_git_status(workspace: WorkspaceRoot, path: str = "") -> Mapping[str, object]:
    return await _guarded(git_status(workspace, path))


@routes.get("/content/git-list-branches", summary="A repository's remote branches")
async def content_git_branches(workspace: WorkspaceRoot, path: str = "artifacts") -> Mapping[str, object]:
    return {"branches": await _guarded(list_branches(workspace, path))}


@routes.post("/content/git-configure-remote", summary="Set a repository's remote")
async def content_git_configure_remote(body: RemoteBody, workspace: WorkspaceRoot, github: GitHubToken = "",
                                       gitlab: GitLabToken = "") -> Mapping[str, object]:
    return await _guarded(configure_remote(workspace, body.path, body.remote_url, body.branch or "main",
                                           _tokens(github, gitlab)))


@routes.get("/content/workflow-metadata", summary="The active workflow's commands and agents")
async def workflow_metadata(workflows: WorkflowSet) -> Mapping[str, object]:
    return await _guarded(asyncio.to_thread(workflows.metadata))


# ----- repositories and workflows --------------------------------------------------------------------------
@routes.post("/repos/add", summary="Clone a repository into the workspace")
async def repos_add(body: RepoBody, repos: Repos, github: GitHubToken = "",
                    gitlab: GitLabToken = "") -> Mapping[str, object]:
    return await _guarded(repos.add(body.url, body.branch, body.name, _tokens(github, gitlab)), git_status_code=502)


@routes.post("/repos/remove", summary="Remove a repository from the workspace")
async def repos_remove(body: NameBody, repos: Repos) -> Mapping[str, object]:
    await _guarded(repos.remove(body.name))
    return {"message": "removed", "name": body.name}


@routes.get("/repos/status", summary="The workspace's repositories")
async def repos_status(repos: Repos) -> Mapping[str, object]:
    return {"repos": await _guarded(repos.status())}


@routes.post("/workflow", summary="Select the active workflow")
async def select_workflow(body: WorkflowBody, workflows: WorkflowSet, workspace: WorkspaceRoot, runs: Runs,
                          runtime: RuntimeState, github: GitHubToken = "",
                          gitlab: GitLabToken = "") -> Mapping[str, object]:
    spec = WorkflowSpec(body.git_url.strip(), body.branch.strip() or "main", body.path.strip().strip("/"))
    async with runs.place_change() as turns_held:  # no run starts while the folder changes under it
        if turns_held and workflows.would_change(spec):
            raise ApiError(409, ErrorCode.RUN_ACTIVE, "a run is in progress, waiting or paused for a person; switch "
                           "the workflow once it has finished (nothing was changed)")
        folder, changed = await _guarded(workflows.select(spec, _tokens(github, gitlab)), git_status_code=502)
    if changed:
        await runtime.on_workflow_change()
    return {"message": "Workflow updated" if changed else "Workflow already active", "gitUrl": spec.git_url,
            "branch": spec.branch, "path": spec.path, "directory": workspace.relative(folder)}
