"""The ACP (Agent Client Protocol, version 1) messages the runner exchanges with ``gemini --acp``, as pydantic models:
JSON-RPC 2.0 over NDJSON stdio. Shapes as the CLI 0.61 sends them (../shared/research/gemini-acp-and-approvals.md
§1), with Gemini's extensions: ``models`` in the ``session/new`` / ``session/load`` results, ``session/set_model``,
and the token usage in the ``session/prompt`` result's ``_meta.quota``.

Written here rather than taken from ``agent-client-protocol`` (PyPI), which has no ``session/set_model``, drops
``models`` and costs ~15 MiB when imported: the runner needs a dozen of its messages.

Field names are snake_case with the protocol's camelCase as aliases (``_meta`` as ``meta``). Every message the CLI
sends allows fields it does not declare (``extra="allow"``: kept in ``model_extra``, nothing is lost) and gives its
optional fields defaults, so a CLI that adds or omits something still parses. An unknown ``sessionUpdate`` kind,
or a known one that does not fit its model, comes back as ``OtherUpdate`` with all its fields. A ``session/update``
line is typed in one pass from its JSON (``parse_message``: the hot path). What the runner sends is dumped with
``wire`` (by alias, without the fields that are None).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

PROTOCOL_VERSION = 1


class AcpModel(BaseModel):
    """An ACP object: camelCase on the wire, undeclared fields kept."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


def wire(model: BaseModel) -> dict[str, Any]:
    """What is sent: the protocol's names, no field that is None."""
    return model.model_dump(by_alias=True, exclude_none=True)


def received(model: BaseModel) -> dict[str, Any]:
    """A message as it arrived: the protocol's names, only the fields it had (undeclared ones included)."""
    return model.model_dump(by_alias=True, exclude_unset=True)


def first_error(exc: ValidationError) -> str:
    """Where a message does not fit its model, and why (the first error)."""
    first = exc.errors(include_url=False)[0]
    return f"{'.'.join(str(part) for part in first.get('loc', ())) or 'message'}: {first.get('msg')}"


# ----- JSON-RPC 2.0 -------------------------------------------------------------------------------------------
RequestId = int | str


class JsonRpcError(BaseModel):
    """A JSON-RPC error. For ``session/prompt`` Gemini's ``code`` is the model API's HTTP status."""

    model_config = ConfigDict(extra="allow")

    code: Any = None
    message: Annotated[str, BeforeValidator(lambda value: "" if value is None else str(value))] = ""
    data: Any = None


class JsonRpcMessage(BaseModel):
    """One line of the channel: a request (``method`` and ``id``), a notification (``method``) or a reply (``id``
    with ``result`` or ``error``). ``params`` / ``result`` stay untyped here: which model they are depends on the
    method (of the request a reply answers); ``params`` / ``result`` that are not objects read as ``{}``."""

    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"]
    id: RequestId | None = None
    method: str | None = None
    params: Any = None
    result: Any = None
    error: Any = None

    @property
    def is_request(self) -> bool:
        return self.method is not None and "id" in self.model_fields_set

    def params_object(self) -> dict[str, Any]:
        return self.params if isinstance(self.params, dict) else {}

    def result_object(self) -> dict[str, Any]:
        return self.result if isinstance(self.result, dict) else {}

    def error_object(self) -> JsonRpcError | None:
        return JsonRpcError.model_validate(self.error) if isinstance(self.error, dict) else None


# ----- content ------------------------------------------------------------------------------------------------
class ContentBlock(AcpModel):
    """A prompt's or a message's content: ``text``, ``image`` (``mimeType``, ``data``), ``resource_link`` (``uri``,
    ``name``, ``mimeType``), ``resource``, ``audio``."""

    type: str = ""
    text: str | None = None
    data: str | None = None
    mime_type: str | None = None
    uri: str | None = None
    name: str | None = None


class ToolCallContent(AcpModel):
    """What a tool call shows: ``content`` (a content block), ``diff`` (``path``, ``oldText``, ``newText``) or
    ``terminal`` (``terminalId``)."""

    type: str = ""
    content: ContentBlock | None = None
    path: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    terminal_id: str | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ToolCallLocation(AcpModel):
    path: str | None = None
    line: int | None = None


class ToolCall(AcpModel):
    """A tool call as ``tool_call`` / ``tool_call_update`` and a permission request's ``toolCall`` carry it. Gemini
    sends no tool name and no ``rawInput`` / ``rawOutput``; a failed validation is a lone update with no title."""

    tool_call_id: str = ""
    title: str | None = None
    kind: str | None = None  # read, edit, delete, move, search, execute, think, fetch, other
    status: str | None = None  # pending, in_progress, completed, failed
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


# ----- session/update -----------------------------------------------------------------------------------------
class MessageChunk(AcpModel):
    """``agent_message_chunk``, ``agent_thought_chunk``, ``user_message_chunk`` (the last only in a load's replay)."""

    session_update: Literal["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]
    content: ContentBlock | None = None
    message_id: str | None = None  # the agent's id of the message a chunk belongs to (opencode sends it)
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    @property
    def text(self) -> str:
        return (self.content.text or "") if self.content is not None else ""


class ToolCallUpdate(ToolCall):
    """``tool_call`` (a call starts) and ``tool_call_update`` (it goes on or ends)."""

    session_update: Literal["tool_call", "tool_call_update"]


class AvailableCommand(AcpModel):
    name: str
    description: str | None = None
    input: Any = None


class CommandsUpdate(AcpModel):
    """``available_commands_update``: the slash commands (the last update of a ``session/load`` replay)."""

    session_update: Literal["available_commands_update"]
    available_commands: list[AvailableCommand] = Field(default_factory=list)


class ModeUpdate(AcpModel):
    session_update: Literal["current_mode_update"]
    current_mode_id: str | None = None


class OtherUpdate(AcpModel):
    """Any other kind (``plan``, ``usage_update``, ... or one a later CLI adds), with all its fields."""

    session_update: str = ""


KnownUpdate = Annotated[MessageChunk | ToolCallUpdate | CommandsUpdate | ModeUpdate,
                        Field(discriminator="session_update")]
# a known kind by its ``sessionUpdate``, else (unknown, or not fitting) ``OtherUpdate``
SessionUpdate = Annotated[KnownUpdate | OtherUpdate, Field(union_mode="left_to_right")]


class SessionNotification(AcpModel):
    """The params of a ``session/update`` notification."""

    session_id: str
    update: SessionUpdate


UPDATE: TypeAdapter[SessionUpdate] = TypeAdapter(SessionUpdate)


class UpdateNotification(BaseModel):
    """A whole ``session/update`` line, typed in one pass (most of what the CLI prints)."""

    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"]
    method: Literal["session/update"]
    params: SessionNotification


MESSAGE: TypeAdapter[JsonRpcMessage] = TypeAdapter(JsonRpcMessage)
UPDATE_LINE: TypeAdapter[UpdateNotification] = TypeAdapter(UpdateNotification)
# How the CLI (JSON.stringify in the ACP SDK) starts every session/update: such a line is typed in one pass
UPDATE_PREFIX = '{"jsonrpc":"2.0","method":"session/update",'


def parse_message(text: str) -> UpdateNotification | JsonRpcMessage:
    """One stdout line: a ``session/update`` typed whole (``UpdateNotification``) when it starts as the CLI writes
    them and fits, else any JSON-RPC message (``JsonRpcMessage``, whose ``params`` the caller types by its
    method); ``ValueError`` (pydantic's ``ValidationError``) when the line is not a JSON-RPC 2.0 object."""
    if text.startswith(UPDATE_PREFIX):
        try:
            return UPDATE_LINE.validate_json(text)
        except ValidationError:
            pass  # typed below as any message; the receiver says why it does not fit
    return MESSAGE.validate_json(text)


# ----- session/request_permission (agent -> client) -----------------------------------------------------------
class PermissionOption(AcpModel):
    option_id: str
    name: str = ""
    kind: str = ""  # allow_once, allow_always, reject_once, reject_always


class RequestPermissionParams(AcpModel):
    session_id: str | None = None
    options: list[PermissionOption] = Field(default_factory=list)
    tool_call: ToolCall = Field(default_factory=ToolCall)


class SelectedOutcome(AcpModel):
    outcome: Literal["selected"] = "selected"
    option_id: str


class CancelledOutcome(AcpModel):
    outcome: Literal["cancelled"] = "cancelled"


class RequestPermissionResponse(AcpModel):
    outcome: SelectedOutcome | CancelledOutcome


# ----- initialize ---------------------------------------------------------------------------------------------
class FileSystemCapability(AcpModel):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientCapabilities(AcpModel):
    fs: FileSystemCapability = Field(default_factory=FileSystemCapability)
    terminal: bool = False


class InitializeParams(AcpModel):
    protocol_version: int = PROTOCOL_VERSION
    client_capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)


class Implementation(AcpModel):
    name: str = ""
    title: str | None = None
    version: str | None = None


class AuthMethod(AcpModel):
    id: str
    name: str = ""
    description: str | None = None


class InitializeResult(AcpModel):
    protocol_version: int | None = None
    agent_info: Implementation | None = None
    agent_capabilities: dict[str, Any] = Field(default_factory=dict)
    auth_methods: list[AuthMethod] = Field(default_factory=list)


# ----- sessions -----------------------------------------------------------------------------------------------
class McpServer(AcpModel):
    """An MCP server of a session: stdio (``command``, ``args``, ``env``), or ``type`` http/sse (``url``,
    ``headers``)."""

    name: str


class NewSessionParams(AcpModel):
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)


class LoadSessionParams(NewSessionParams):
    session_id: str


class SessionMode(AcpModel):
    id: str
    name: str = ""
    description: str | None = None


class SessionModeState(AcpModel):
    current_mode_id: str | None = None
    available_modes: list[SessionMode] = Field(default_factory=list)


class ModelInfo(AcpModel):
    """Gemini's extension: a model a session can use."""

    model_id: str
    name: str = ""
    description: str | None = None


class SessionModelState(AcpModel):
    """Gemini's extension: the session's model and the ones it can switch to (``session/set_model``)."""

    current_model_id: str | None = None
    available_models: list[ModelInfo] = Field(default_factory=list)


class LoadSessionResult(AcpModel):
    """``session/load``'s result (no ``sessionId``); ``session/new``'s adds it."""

    modes: SessionModeState | None = None
    models: SessionModelState | None = None


class NewSessionResult(LoadSessionResult):
    session_id: str


class SetModeParams(AcpModel):
    session_id: str
    mode_id: str


class SetModelParams(AcpModel):
    """Gemini's extension: ``session/set_model`` (answered ``{}``; the next model request uses it)."""

    session_id: str
    model_id: str


class EmptyResult(AcpModel):
    """``{}``: the result of ``session/set_mode`` and ``session/set_model``."""


class SetConfigOptionParams(AcpModel):
    """``session/set_config_option``: one of the session's config options (``configOptions``) to a value."""

    session_id: str
    config_id: str
    value: str


class CloseSessionParams(AcpModel):
    """``session/close`` (``sessionCapabilities.close``): the agent frees the session (Claude Code's process of it);
    a later ``session/load`` or ``session/resume`` opens it again."""

    session_id: str


class SetTitleParams(AcpModel):
    """``session/set_title`` (unstable in ACP v1, codex-acp has it): the session's title, given, not asked of a
    model."""

    session_id: str
    title: str


class CancelParams(AcpModel):
    """``session/cancel`` (a notification): the prompt ends with ``stopReason: cancelled``."""

    session_id: str


# ----- session/prompt -----------------------------------------------------------------------------------------
class PromptParams(AcpModel):
    session_id: str
    prompt: list[ContentBlock]


class TokenCount(BaseModel):
    """Gemini's usage counts (snake_case on the wire)."""

    model_config = ConfigDict(extra="allow")

    input_tokens: int | None = None
    output_tokens: int | None = None


class ModelUsage(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str | None = None
    token_count: TokenCount | None = None


class Quota(BaseModel):
    """Gemini's extension: ``_meta.quota`` of a ``session/prompt`` result, the sums over the prompt's model calls,
    in all and per model (the only usage ACP reports)."""

    model_config = ConfigDict(extra="allow")

    token_count: TokenCount | None = None
    model_usage: list[ModelUsage] | None = None


class PromptMeta(BaseModel):
    model_config = ConfigDict(extra="allow")

    quota: Quota | None = None


class PromptResult(AcpModel):
    """``stopReason``: ``end_turn``, ``cancelled``, ``max_turn_requests``, ``max_tokens`` (``refusal``,
    ``max_tokens`` in the schema)."""

    stop_reason: str = "end_turn"
    meta: PromptMeta | None = Field(default=None, alias="_meta")
