"""The committed web app (rawtrio/dashboard/static/) is the build of its sources.

`make dashboard` builds rawtrio/dashboard/web/ with esbuild into static/; the build is
committed so an install serves it with no Node. Here it is rebuilt from the same sources and
lockfile into a temporary folder and compared byte for byte, so a change to web/src/ without
`make dashboard` (or a hand edit of static/) fails. The build is deterministic: hashed names,
no timestamps, no absolute paths.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import trio

from tests.conftest import requires

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "rawtrio" / "dashboard" / "web"
STATIC = ROOT / "rawtrio" / "dashboard" / "static"


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


async def test_committed_assets_are_a_fresh_build_of_the_sources(tmp_path: Path) -> None:
    node = shutil.which("node")
    requires(node is not None, "node is not installed (needed to build the dashboard)")
    requires(
        (WEB / "node_modules" / "esbuild").is_dir(),
        "the dashboard's npm packages are not installed (`make dashboard` installs them)",
    )
    assert node is not None
    out = tmp_path / "static"
    with trio.fail_after(120):
        await trio.run_process(
            [node, "build.mjs", "--outdir", str(out)], cwd=WEB, capture_stdout=True
        )
    fresh, committed = tree(out), tree(STATIC)
    assert sorted(fresh) == sorted(committed), "static/ is stale: run `make dashboard`, commit"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"static/ differs from a fresh build in {stale}: run `make dashboard`"


def test_the_page_has_no_inline_script_or_style() -> None:
    """The server's CSP allows scripts and styles from 'self' only."""
    page = (STATIC / "index.html").read_text()
    assert "<style" not in page
    assert " style=" not in page
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", page, re.S)
    assert scripts, "the page loads no script"
    for attrs, body in scripts:
        assert re.search(r'\bsrc="/assets/[\w.-]+\.js"', attrs), attrs
        assert body.strip() == ""
    for href in re.findall(r'(?:src|href)="([^"]+)"', page):
        if href == "data:,":  # no favicon (and no request for one)
            continue
        assert href.startswith("/assets/"), f"{href}: everything comes from /assets/"
        assert (STATIC / href.lstrip("/")).is_file(), f"{href} is not in static/"
