"""The API's bodies and answers as pydantic models: requests are validated with them
(untrusted data enters here), answers are built with them, and the OpenAPI file is
generated from them (rawtrio.dashboard.openapi). Field meanings: docs/dashboard-api.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

#: What a client request id may be: a UUID, or any short token of these characters.
REQUEST_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,200}$"
MAX_TEXT = 1024 * 1024
MAX_TITLE = 200

Mode = Literal["default", "accept-edits", "plan", "bypass"]
Decision = Literal["allow_once", "allow_always", "deny"]
RequestId = Annotated[str, StringConstraints(pattern=REQUEST_ID_PATTERN)]
Title = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TITLE, pattern=r"\S")]


class Body(BaseModel):
    """A request body: unknown keys are refused (a typo is an error, not a no-op)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- request bodies ---------------------------------------------------------------------


class CreateSession(Body):
    cwd: str | None = Field(None, description="absolute folder; default: bootstrap default_cwd")
    title: Title | None = None


class RenameSession(Body):
    title: Title


class SubmitTurn(Body):
    client_request_id: RequestId
    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]


class Compact(Body):
    client_request_id: RequestId
    focus: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = None


class Cancel(Body):
    reason: Annotated[str, StringConstraints(min_length=1, max_length=500)] | None = None


class AnswerPermission(Body):
    decision: Decision
    scope: Literal["session", "project"] = "session"
    message: Annotated[str, StringConstraints(max_length=10_000)] | None = None


class SetMode(Body):
    mode: Mode


class SetModel(Body):
    model: Annotated[str, StringConstraints(min_length=1, max_length=200)]


# --- answers ----------------------------------------------------------------------------


class ErrorInfo(Answer):
    code: str
    message: str
    details: dict[str, Any]


class ErrorAnswer(Answer):
    error: ErrorInfo


class Limits(Answer):
    max_body_bytes: int
    page_max: int
    page_default: int
    heartbeat_s: float


class Bootstrap(Answer):
    api_version: int
    version: str
    mode: Literal["standalone", "host"]
    pid: int
    default_cwd: str
    limits: Limits
    modes: list[Mode]
    permission_options: list[Decision]


class Usage(Answer):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    context_tokens: int
    context_window: int | None


class SearchMatch(Answer):
    seq: int
    event_type: str
    snippet: str


class SessionSummary(Answer):
    id: str
    title: str
    cwd: str
    provider: str
    model: str
    created_at: float
    updated_at: float
    message_count: int
    live: bool
    running: str | None
    match: SearchMatch | None = None


class SessionList(Answer):
    sessions: list[SessionSummary]
    next_cursor: str | None


class PermissionRequest(Answer):
    request_id: str
    call_id: str
    tool_id: str
    summary: str
    arguments: Any
    options: list[str]


class SessionDetail(SessionSummary):
    mode: Mode | None
    models: list[str]
    usage: Usage
    pending_permissions: list[PermissionRequest]
    last_seq: int


class Event(BaseModel):
    """A session event as `rawtrio.events.event_to_json` writes it (docs/contracts.md,
    "Events and stream-json"); the fields after these depend on `type`."""

    model_config = ConfigDict(extra="allow")
    v: int
    seq: int
    type: str
    session_id: str
    turn_id: str | None
    ts: float


class HistoryPage(Answer):
    events: list[Event]
    next_cursor: str | None
    last_seq: int


class UsageAnswer(Answer):
    session_id: str
    live: bool
    usage: Usage


class Receipt(Answer):
    operation_id: str
    client_request_id: str
    kind: Literal["turn", "compact"]
    session_id: str
    turn_id: str | None
    status: Literal["running", "ended"]
    outcome: str | None
    reason: str | None
    accepted_at: float
    ended_at: float | None
    cancel_requested: bool


class Cancelled(Answer):
    cancelled: bool


class PermissionAnswered(Answer):
    request_id: str
    decision: Decision
