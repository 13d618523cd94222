"""What every request passes and every response carries (docs/dashboard-api.md,
"Security rules"), as one ASGI middleware around the whole app.

Order of the checks, before the app sees the request:

1. `Host` must be exactly this listener (`127.0.0.1:PORT` or `localhost:PORT`): a DNS
   name that a rebinding attack pointed at 127.0.0.1 is refused (403 `forbidden_host`).
2. `Origin`, when sent, must be this listener's own origin; `null` and any other origin
   are refused, and so is `Sec-Fetch-Site: cross-site` / `same-site` (403
   `forbidden_origin`). Browsers send `Origin` on every cross-origin request and every
   POST, so a foreign page cannot get a request past this line; there are no CORS
   headers, so it could not read an answer either.
3. Under `/api/`: no query parameter may carry the token (400 `token_in_query`: a URL
   ends up in logs and histories), then `Authorization: Bearer <token>`, compared in
   constant time (401 `unauthorized`).

Every response — the app's, a refusal, an error, the event stream, the static files —
gets the headers of `SECURITY_HEADERS` (a strict Content-Security-Policy among them) and
`Cache-Control: no-store` unless it set its own. A bug in a handler is answered 500 with
the JSON error shape, never a traceback (the log has it).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final
from urllib.parse import parse_qsl

from rawtrio.dashboard.errors import ApiError, internal

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS: Final[tuple[tuple[bytes, bytes], ...]] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
API_PREFIX: Final = "/api/"
#: Query parameter names that are refused under /api/ whatever their value.
TOKEN_PARAMETERS: Final = frozenset({"token", "access_token"})
_REFUSED_FETCH_SITES: Final = frozenset({"cross-site", "same-site"})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def with_security_headers(send: Send) -> Send:
    """`send` adding the security headers (and `no-store` if no cache policy was set)."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(bytes(k).lower(), bytes(v)) for k, v in message.get("headers", ())]
            have = {k for k, _ in headers}
            headers += [(k, v) for k, v in SECURITY_HEADERS if k not in have]
            if b"cache-control" not in have:
                headers.append((b"cache-control", b"no-store"))
            message = {**message, "headers": headers}
        await send(message)

    return wrapped


async def send_error(send: Send, error: ApiError) -> None:
    response = error.response()
    await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:  # pragma: no cover - a response never reads
    return {"type": "http.disconnect"}


class Guard:
    """The middleware: checks, headers, and the last word on a failing handler."""

    def __init__(self, app: ASGIApp, *, token: str, port: int | None = None) -> None:
        self.app = app
        self._token = token.encode()
        self.hosts: frozenset[str] = frozenset()
        self.origins: frozenset[str] = frozenset()
        if port is not None:
            self.listen_on(port)

    def listen_on(self, port: int) -> None:
        """The port the listener got: until it is known, every request is refused."""
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # WebSocket: not part of this API
            await send({"type": "websocket.close", "code": 1008})
            return
        send = with_security_headers(send)
        refusal = self.refusal(scope)
        if refusal is not None:
            log.info("refused %s %s: %s", scope.get("method"), scope.get("path"), refusal.code)
            await send_error(send, refusal)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception:
            log.exception("%s %s failed", scope.get("method"), scope.get("path"))
            if not started:
                await send_error(send, internal())

    def refusal(self, scope: Scope) -> ApiError | None:
        """Why this request is refused, or None."""
        host = _header(scope, b"host")
        if host not in self.hosts:
            return ApiError(
                403,
                "forbidden_host",
                f"Host {host!r} is not this server: open the URL rawtrio printed "
                f"({' or '.join(sorted(self.hosts))})",
            )
        origin = _header(scope, b"origin")
        if origin is not None and origin not in self.origins:
            return ApiError(403, "forbidden_origin", f"Origin {origin!r} is not allowed")
        site = _header(scope, b"sec-fetch-site")
        if site in _REFUSED_FETCH_SITES:
            return ApiError(403, "forbidden_origin", f"a {site} request is not allowed")
        if not str(scope.get("path", "")).startswith(API_PREFIX):
            return None
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        for name, value in parse_qsl(query, keep_blank_values=True):
            if name.lower() in TOKEN_PARAMETERS or (
                value and hmac.compare_digest(value.encode(), self._token)
            ):
                return ApiError(
                    400,
                    "token_in_query",
                    "the token must not be in the URL: send it as Authorization: Bearer",
                    {"parameter": name},
                )
        auth = _header(scope, b"authorization") or ""
        scheme, _, offered = auth.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            offered.strip().encode(), self._token
        ):
            why = "wrong token" if auth else "missing token"
            return ApiError(
                401,
                "unauthorized",
                f"{why}: send Authorization: Bearer <the token of the URL rawtrio printed>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return None
