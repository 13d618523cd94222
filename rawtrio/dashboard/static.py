"""The web app's files: `rawtrio/dashboard/static/` in the installed package (built by the
web app's toolchain and shipped as package data, so a plain install serves them with no
Node at run time).

`/` is `static/index.html`; `/assets/...` are the files under `static/assets/`
(Starlette's `StaticFiles`: no path escapes the folder). Without a built app (a checkout
whose front end was never built) `/` is a short page that says so. The token is never in
these files: the page reads it from the URL's fragment (docs/dashboard-api.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from rawtrio.dashboard.errors import not_found

STATIC: Final = Path(__file__).parent / "static"

PLACEHOLDER: Final = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>rawtrio dashboard</title></head>
<body>
<h1>rawtrio dashboard</h1>
<p>The web app is not built into this installation (rawtrio/dashboard/static/ has no
index.html). The API is served: see docs/dashboard-api.md.</p>
</body>
</html>
"""


class _Assets(StaticFiles):
    """Hashed build outputs: revalidated, never stored stale."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["cache-control"] = "no-cache"
        return response


async def index(request: Request) -> Response:
    page = STATIC / "index.html"
    try:
        text = page.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = PLACEHOLDER
    return HTMLResponse(text, headers={"cache-control": "no-store"})


async def _no_assets(request: Request) -> Response:
    return not_found(request.url.path).response()


def routes(root: Path = STATIC) -> list[BaseRoute]:
    assets = root / "assets"
    serve_assets: BaseRoute = (
        Mount("/assets", app=_Assets(directory=assets), name="assets")
        if assets.is_dir()
        else Route("/assets/{path:path}", _no_assets)
    )
    return [Route("/", index, methods=["GET"]), serve_assets]
