"""Serving the dashboard: Starlette on hypercorn's trio worker, on 127.0.0.1.

`serve_dashboard(nursery, agent, ...)` builds the app for one `AcpAgent` (the host's, or
`rawtrio dashboard`'s own), picks the per-process token, binds `127.0.0.1:PORT` (a free
port when 0), starts hypercorn in `nursery` and returns where it listens. It also writes
`<state>/dashboard.json` (`{"url", "token", "pid"}`, 0600), removed when the nursery ends,
so a detached host's dashboard can be found again. Printing the URL is the caller's (the
command line's), once.

hypercorn under trio: `hypercorn.trio.serve` runs the server in the caller's trio run (no
thread, no asyncio); Starlette and its `StaticFiles` run on anyio, which runs on trio.
Its own logs go to the `rawtrio.dashboard.http` logger (no access log: request lines
would hold session ids, never secrets, but they are noise), the `Server` header is left
out, and a stopping server gives open streams `GRACEFUL_S` to end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import trio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from rawtrio.acp.agent import AcpAgent
from rawtrio.dashboard import static
from rawtrio.dashboard.api import ENDPOINTS, Endpoint, Json
from rawtrio.dashboard.backend import Backend, Mode
from rawtrio.dashboard.body import MAX_BODY_BYTES
from rawtrio.dashboard.errors import ApiError, error_body, internal
from rawtrio.dashboard.security import Guard
from rawtrio.private_files import write_private

log = logging.getLogger(__name__)

HOST: Final = "127.0.0.1"
STATE_FILE: Final = "dashboard.json"
GRACEFUL_S: Final = 1.0


@dataclass(frozen=True)
class DashboardInfo:
    url: str
    token: str
    port: int
    backend: Backend

    @property
    def open_url(self) -> str:
        """The URL to open: the token in the fragment, which a browser never sends."""
        return f"{self.url}/#token={self.token}"


def _endpoint(backend: Backend, ep: Endpoint) -> Any:
    async def serve(request: Request) -> Response:
        backend.requests += 1
        try:
            return await ep.handler(backend, request)
        except ApiError as exc:
            return exc.response()
        finally:
            backend.requests -= 1

    serve.__name__ = ep.name
    return serve


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        return Json(
            error_body(
                "method_not_allowed",
                f"{request.method} is not allowed here (allowed: {allowed})",
                {"allowed": [a.strip() for a in allowed.split(",") if a.strip()]},
            ),
            status_code=405,
            headers={"allow": allowed},
        )
    if exc.status_code == 404:
        return Json(error_body("not_found", f"not found: {request.url.path}"), status_code=404)
    return Json(
        error_body("bad_request" if exc.status_code < 500 else "internal", str(exc.detail)),
        status_code=exc.status_code,
    )


async def _bug(request: Request, exc: Exception) -> Response:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return internal().response()


def build_app(backend: Backend, *, token: str, port: int | None = None) -> Guard:
    """The ASGI app: the API and the static files behind the security checks."""
    routes: list[BaseRoute] = [
        Route(ep.path, _endpoint(backend, ep), methods=[ep.method], name=ep.name)
        for ep in ENDPOINTS
    ]
    routes += static.routes()
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: _http_error, Exception: _bug},
    )
    return Guard(app, token=token, port=port)


def new_token() -> str:
    return secrets.token_urlsafe(32)


async def serve_dashboard(
    nursery: trio.Nursery,
    agent: AcpAgent,
    *,
    mode: Mode,
    default_cwd: Path,
    port: int = 0,
    state_dir: Path | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    heartbeat_s: float | None = None,
) -> DashboardInfo:
    """Serve the dashboard in `nursery` until it is cancelled; where it listens.
    `OSError` when the port cannot be bound."""
    from hypercorn.config import Config
    from hypercorn.trio import serve

    backend = Backend(
        agent,
        nursery,
        mode=mode,
        default_cwd=default_cwd,
        max_body_bytes=max_body_bytes,
        **({"heartbeat_s": heartbeat_s} if heartbeat_s is not None else {}),
    )
    token = new_token()
    config = Config()
    config.bind = [f"{HOST}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("rawtrio.dashboard.http")
    config.include_server_header = False
    config.graceful_timeout = GRACEFUL_S
    app = build_app(backend, token=token)  # it refuses everything until it knows the port
    binds: list[str] = await nursery.start(
        lambda task_status: serve(app, config, task_status=task_status)  # type: ignore[arg-type]
    )
    bound = int(binds[0].rsplit(":", 1)[1])
    app.listen_on(bound)
    info = DashboardInfo(f"http://{HOST}:{bound}", token, bound, backend)
    if state_dir is not None:
        path = state_dir / STATE_FILE
        write_private(
            path, json.dumps({"url": info.open_url, "token": token, "pid": os.getpid()}) + "\n"
        )
        nursery.start_soon(_remove_when_done, path)
    return info


async def _remove_when_done(path: Path) -> None:
    try:
        await trio.sleep_forever()
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
