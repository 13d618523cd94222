"""The API's endpoints, declared once: `ENDPOINTS` is what the router serves and what the
OpenAPI file describes (rawtrio.dashboard.openapi), so the two cannot drift apart.

Each handler takes the `Backend` and the request and returns a response; what goes wrong
is an `ApiError` (rawtrio.dashboard.errors), answered in the one error shape. Query
parameters and headers are read here with the checks of docs/dashboard-api.md; bodies are
read by `rawtrio.dashboard.body` against their model.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from rawtrio.dashboard import models as m
from rawtrio.dashboard.backend import PAGE_DEFAULT, PAGE_MAX, Backend
from rawtrio.dashboard.body import read_body
from rawtrio.dashboard.errors import bad_parameter
from rawtrio.dashboard.operations import Operation
from rawtrio.dashboard.security import Receive, Scope, Send
from rawtrio.dashboard.stream import EventStream, sse
from rawtrio.unicode_safety import has_lone_surrogate, replace_lone_surrogates

Handler = Callable[[Backend, Request], Awaitable[Response]]


class Json(JSONResponse):
    """JSON that always encodes: a lone surrogate that reached an answer (a model's text)
    becomes U+FFFD instead of failing the response."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        if not text.isascii() and has_lone_surrogate(text):
            text = replace_lone_surrogates(text)
        return text.encode("utf-8")


@dataclass(frozen=True)
class Param:
    name: str
    where: str  # "query", "header" or "path"
    description: str
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "string"})
    required: bool = False


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    name: str
    summary: str
    handler: Handler
    #: Success statuses and the model of each answer (None: no body).
    answers: Mapping[int, type[BaseModel] | None]
    errors: tuple[int, ...] = ()
    body: type[BaseModel] | None = None
    body_optional: bool = False
    params: tuple[Param, ...] = ()
    #: Answers `text/event-stream` (the event stream) instead of JSON.
    stream: bool = False


# --- parameters ---------------------------------------------------------------------------


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return PAGE_DEFAULT
    if not raw.isdigit() or not 1 <= int(raw) <= PAGE_MAX:
        raise bad_parameter("limit", f"expected a whole number from 1 to {PAGE_MAX}, got {raw!r}")
    return int(raw)


def _cursor(request: Request) -> str | None:
    raw = request.query_params.get("cursor")
    if raw is not None and not raw:
        raise bad_parameter("cursor", "empty: leave it out for the first page")
    return raw


def _session_id(request: Request) -> str:
    return str(request.path_params["session_id"])


def _cwd(request: Request) -> str | None:
    raw = request.query_params.get("cwd")
    if raw is not None and not Path(raw).is_absolute():
        raise bad_parameter("cwd", f"expected an absolute path, got {raw!r}")
    return raw


def _last_event_id(request: Request, fallback: int) -> int:
    raw = request.headers.get("last-event-id")
    if raw is None or not raw.strip():
        return fallback
    raw = raw.strip()
    if not raw.isdigit():
        raise bad_parameter(
            "Last-Event-ID", f"expected the id (a sequence number) of an event, got {raw!r}"
        )
    return int(raw)


def _receipt(op: Operation, status: int) -> Response:
    return Json(op.receipt(), status_code=status, headers={"location": f"/api/operations/{op.id}"})


# --- handlers -----------------------------------------------------------------------------


async def bootstrap(backend: Backend, request: Request) -> Response:
    return Json(backend.bootstrap())


async def list_sessions(backend: Backend, request: Request) -> Response:
    query = request.query_params.get("q")
    if query is not None and not query.strip():
        query = None
    page = await backend.list_sessions(
        limit=_limit(request), cursor=_cursor(request), query=query, cwd=_cwd(request)
    )
    return Json(page)


async def create_session(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.CreateSession, max_bytes=backend.max_body_bytes)
    detail = await backend.create_session(body.cwd, body.title)
    return Json(detail, status_code=201, headers={"location": f"/api/sessions/{detail['id']}"})


async def get_session(backend: Backend, request: Request) -> Response:
    return Json(await backend.detail(_session_id(request)))


async def rename_session(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.RenameSession, max_bytes=backend.max_body_bytes)
    return Json(await backend.rename(_session_id(request), body.title))


async def delete_session(backend: Backend, request: Request) -> Response:
    await backend.delete(_session_id(request))
    return Response(status_code=204)


async def history(backend: Backend, request: Request) -> Response:
    order = request.query_params.get("order", "newest")
    if order not in ("newest", "oldest"):
        raise bad_parameter("order", f"expected newest or oldest, got {order!r}")
    page = await backend.history(
        _session_id(request),
        cursor=_cursor(request),
        limit=_limit(request),
        newest_first=order == "newest",
    )
    return Json(page)


async def usage(backend: Backend, request: Request) -> Response:
    return Json(await backend.usage(_session_id(request)))


async def submit_turn(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.SubmitTurn, max_bytes=backend.max_body_bytes)
    op, new = await backend.submit(_session_id(request), body.client_request_id, body.text)
    return _receipt(op, 202 if new else 200)


async def compact(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.Compact, max_bytes=backend.max_body_bytes)
    op, new = await backend.compact(_session_id(request), body.client_request_id, body.focus)
    return _receipt(op, 202 if new else 200)


async def get_operation(backend: Backend, request: Request) -> Response:
    return Json(backend.operations.get(str(request.path_params["operation_id"])).receipt())


async def cancel_operation(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.Cancel, optional=True, max_bytes=backend.max_body_bytes)
    op, running = backend.cancel_operation(str(request.path_params["operation_id"]), body.reason)
    return _receipt(op, 202 if running else 200)


async def cancel_session(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.Cancel, optional=True, max_bytes=backend.max_body_bytes)
    return Json({"cancelled": await backend.cancel_session(_session_id(request), body.reason)})


async def answer_permission(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.AnswerPermission, max_bytes=backend.max_body_bytes)
    request_id = str(request.path_params["request_id"])
    backend.answer_permission(
        _session_id(request), request_id, body.decision, body.scope, body.message
    )
    return Json({"request_id": request_id, "decision": body.decision})


async def set_mode(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.SetMode, max_bytes=backend.max_body_bytes)
    return Json(await backend.set_mode(_session_id(request), body.mode))


async def set_model(backend: Backend, request: Request) -> Response:
    body = await read_body(request, m.SetModel, max_bytes=backend.max_body_bytes)
    return Json(await backend.set_model(_session_id(request), body.model))


class EventStreamResponse(Response):
    """`text/event-stream`: the `hello` message, then `EventStream` until it ends."""

    media_type = "text/event-stream"

    def __init__(self, backend: Backend, session_id: str, hello: dict[str, Any]) -> None:
        super().__init__(
            status_code=200,
            media_type=self.media_type,
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )
        self._backend = backend
        self._session_id = session_id
        self._hello = hello

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        stream = EventStream(self._backend, self._session_id, self._hello["after"], send)
        await stream.write(sse("hello", self._hello))
        await stream.run(receive)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def events(backend: Backend, request: Request) -> Response:
    session_id = _session_id(request)
    await backend.record(session_id)
    live = backend.live(session_id)
    last = live.session.recorder.seq if live is not None else None
    if last is None:
        last = await backend.runtime.last_seq(session_id)
    after = _last_event_id(request, last)
    hello = {
        "session_id": session_id,
        "live": live is not None,
        "running": live.session.running_turn if live is not None else None,
        "last_seq": last,
        "after": after,
    }
    return EventStreamResponse(backend, session_id, hello)


# --- the table ----------------------------------------------------------------------------

_SID: Final = Param("session_id", "path", "a session id", required=True)
_LIMIT: Final = Param(
    "limit",
    "query",
    f"page size, 1 to {PAGE_MAX} (default {PAGE_DEFAULT})",
    {"type": "integer", "minimum": 1, "maximum": PAGE_MAX},
)
_CURSOR: Final = Param("cursor", "query", "the next_cursor of the previous page")
_OP: Final = Param("operation_id", "path", "an operation_id of a receipt", required=True)
_COMMON: Final = (400, 401, 403, 500)
_WITH_BODY: Final = (*_COMMON, 413, 415, 422)

ENDPOINTS: Final[tuple[Endpoint, ...]] = (
    Endpoint("GET", "/api/bootstrap", "bootstrap", "What the page needs to start",
             bootstrap, {200: m.Bootstrap}, _COMMON),
    Endpoint("GET", "/api/sessions", "list_sessions",
             "Sessions, most recent first, or matching a search", list_sessions,
             {200: m.SessionList}, (*_COMMON, 503),
             params=(_LIMIT, _CURSOR,
                     Param("q", "query", "search words (title, folder, display history)"),
                     Param("cwd", "query", "only the sessions of this absolute folder"))),
    Endpoint("POST", "/api/sessions", "create_session", "Create a session (live)",
             create_session, {201: m.SessionDetail}, (*_WITH_BODY, 503), body=m.CreateSession),
    Endpoint("GET", "/api/sessions/{session_id}", "get_session", "A session", get_session,
             {200: m.SessionDetail}, (*_COMMON, 404), params=(_SID,)),
    Endpoint("PATCH", "/api/sessions/{session_id}", "rename_session", "Rename a session",
             rename_session, {200: m.SessionDetail}, (*_WITH_BODY, 404),
             body=m.RenameSession, params=(_SID,)),
    Endpoint("DELETE", "/api/sessions/{session_id}", "delete_session", "Delete a session",
             delete_session, {204: None}, (*_COMMON, 404, 409), params=(_SID,)),
    Endpoint("GET", "/api/sessions/{session_id}/history", "history",
             "A page of the display history", history, {200: m.HistoryPage},
             (*_COMMON, 404),
             params=(_SID, _LIMIT, _CURSOR,
                     Param("order", "query", "newest (default) or oldest first",
                           {"type": "string", "enum": ["newest", "oldest"]}))),
    Endpoint("GET", "/api/sessions/{session_id}/usage", "usage", "Usage and cost",
             usage, {200: m.UsageAnswer}, (*_COMMON, 404), params=(_SID,)),
    Endpoint("GET", "/api/sessions/{session_id}/events", "events",
             "The session's events (Server-Sent Events)", events, {200: None},
             (*_COMMON, 404), params=(
                 _SID,
                 Param("Last-Event-ID", "header", "continue after this event id (seq)",
                       {"type": "string", "pattern": "^[0-9]+$"}),
             ), stream=True),
    Endpoint("POST", "/api/sessions/{session_id}/turns", "submit_turn",
             "Submit a prompt (a turn)", submit_turn, {202: m.Receipt, 200: m.Receipt},
             (*_WITH_BODY, 404, 409, 503), body=m.SubmitTurn, params=(_SID,)),
    Endpoint("POST", "/api/sessions/{session_id}/compact", "compact",
             "Compact the model context", compact, {202: m.Receipt, 200: m.Receipt},
             (*_WITH_BODY, 404, 409, 503), body=m.Compact, params=(_SID,)),
    Endpoint("POST", "/api/sessions/{session_id}/cancel", "cancel_session",
             "Cancel what runs in the session", cancel_session, {200: m.Cancelled},
             (*_WITH_BODY, 404), body=m.Cancel, body_optional=True, params=(_SID,)),
    Endpoint("POST", "/api/sessions/{session_id}/permissions/{request_id}",
             "answer_permission", "Answer a permission request (the first answer wins)",
             answer_permission, {200: m.PermissionAnswered}, (*_WITH_BODY, 404, 409),
             body=m.AnswerPermission,
             params=(_SID, Param("request_id", "path", "the request_id of the request",
                                 required=True))),
    Endpoint("POST", "/api/sessions/{session_id}/mode", "set_mode", "Switch the permission mode",
             set_mode, {200: m.SessionDetail}, (*_WITH_BODY, 404, 409, 503), body=m.SetMode,
             params=(_SID,)),
    Endpoint("POST", "/api/sessions/{session_id}/model", "set_model", "Switch the model",
             set_model, {200: m.SessionDetail}, (*_WITH_BODY, 404, 409, 503), body=m.SetModel,
             params=(_SID,)),
    Endpoint("GET", "/api/operations/{operation_id}", "get_operation", "An operation's receipt",
             get_operation, {200: m.Receipt}, (*_COMMON, 404), params=(_OP,)),
    Endpoint("POST", "/api/operations/{operation_id}/cancel", "cancel_operation",
             "Cancel an operation", cancel_operation, {202: m.Receipt, 200: m.Receipt},
             (*_WITH_BODY, 404), body=m.Cancel, body_optional=True, params=(_OP,)),
)  # fmt: skip
