"""The API's errors: one JSON shape, `{"error": {"code", "message", "details"}}`, with the
status that fits (docs/dashboard-api.md, "Errors").

`ApiError` is raised by the handlers and the request checks and answered as such;
`from_rawtrio` maps the errors a session operation raises (rawtrio.errors) to an
`ApiError`, so every front end's error keeps its meaning here. Anything else is a bug:
answered 500 `internal` with a message that names no internals (the traceback goes to
the log, never to the client).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse

from rawtrio.errors import (
    ConfigError,
    NoCredentials,
    RawtrioError,
    SessionClosed,
    SessionLocked,
    TurnInProgress,
    UnknownSession,
    UsageError,
)
from rawtrio.permissions.approval import ApprovalAlreadyResolved, UnknownApprovalRequest
from rawtrio.store.errors import InvalidCursor, StoreError


class ApiError(Exception):
    """An answer other than success: HTTP status, stable code, one sentence, details."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = dict(details or {})
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message, self.details)

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def error_body(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": dict(details or {})}}


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", f"not found: {what}")


def unknown_session(session_id: str) -> ApiError:
    return ApiError(
        404,
        "unknown_session",
        f"no session with id {session_id!r}",
        {"session_id": session_id},
    )


def bad_parameter(name: str, message: str) -> ApiError:
    return ApiError(400, "bad_request", f"{name}: {message}", {"parameter": name})


def internal() -> ApiError:
    return ApiError(500, "internal", "the server failed to answer; the reason is in its log")


def from_rawtrio(exc: RawtrioError) -> ApiError:
    """The status and code of an error a session operation raised."""
    message = str(exc)
    if isinstance(exc, UnknownSession):
        return unknown_session(exc.session_id)
    if isinstance(exc, SessionLocked):
        return ApiError(409, "session_locked", message, {"session_id": exc.session_id})
    if isinstance(exc, TurnInProgress):
        return ApiError(409, "turn_in_progress", message)
    if isinstance(exc, SessionClosed):
        return ApiError(503, "shutting_down", message)
    if isinstance(exc, NoCredentials | ConfigError):
        return ApiError(503, "not_configured", message)
    if isinstance(exc, InvalidCursor):
        return ApiError(400, "invalid_cursor", "the cursor is not one this server gave out")
    if isinstance(exc, StoreError):
        return ApiError(503, "store_unavailable", message)
    if isinstance(exc, UnknownApprovalRequest):
        return ApiError(
            404,
            "unknown_permission_request",
            f"no pending permission request {exc.request_id!r} in this session",
            {"request_id": exc.request_id},
        )
    if isinstance(exc, ApprovalAlreadyResolved):
        won = exc.resolution
        return ApiError(
            409,
            "already_answered",
            message,
            {
                "request_id": exc.request_id,
                "decision": won.kind.value,
                "answered_by": won.answered_by,
            },
        )
    if isinstance(exc, UsageError):
        return ApiError(422, "validation_failed", message, {"errors": [{"msg": message}]})
    return ApiError(500, "internal", message)
