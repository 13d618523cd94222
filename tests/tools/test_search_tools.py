from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.tools import walk
from rawtrio.tools.base import Tool, ToolOutput
from rawtrio.tools.glob_files import glob_tool
from rawtrio.tools.grep import grep_tool
from rawtrio.tools.list_dir import list_dir_tool
from tests.tools.conftest import MakeCtx, until

GREP, GLOB, LS = grep_tool(), glob_tool(), list_dir_tool()


async def call(tool: Tool, make_ctx: MakeCtx, **args: Any) -> ToolOutput:
    return await tool.handler(make_ctx(), freeze(args))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "a.py").write_text("def alpha():\n    return 1\n")
    (tmp_path / "src" / "b.py").write_text("ALPHA = 2\n")
    (tmp_path / "src" / ".gitignore").write_text("generated.py\n")
    (tmp_path / "src" / "generated.py").write_text("alpha\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.py").write_text("alpha\n")
    (tmp_path / "x.log").write_text("alpha\n")
    (tmp_path / "keep.log").write_text("alpha\n")
    (tmp_path / "blob.bin").write_bytes(b"alpha\0\0")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("alpha\n")
    return tmp_path


async def test_grep_respects_gitignore_and_skips_binary(make_ctx: MakeCtx, repo: Path) -> None:
    out = await call(GREP, make_ctx, pattern="alpha")
    assert out.status is ToolStatus.OK
    assert "src/pkg/a.py:1: def alpha():" in out.content
    assert "keep.log:1: alpha" in out.content
    for hidden in ("build/out.py", "x.log", "generated.py", ".git/config", "blob.bin:"):
        assert hidden not in out.content
    assert out.details["skipped_binary"] == 1
    assert out.details["ignored"] == 3


async def test_grep_ignore_case_glob_and_modes(make_ctx: MakeCtx, repo: Path) -> None:
    out = await call(GREP, make_ctx, pattern="alpha", ignore_case=True, glob="*.py", mode="count")
    assert out.content.splitlines()[:2] == ["src/b.py: 1", "src/pkg/a.py: 1"]
    files = await call(GREP, make_ctx, pattern="alpha", mode="files_with_matches", glob=["!*.log"])
    assert "keep.log" not in files.content
    assert "src/pkg/a.py" in files.content


async def test_grep_context_lines(make_ctx: MakeCtx, repo: Path) -> None:
    out = await call(GREP, make_ctx, pattern="return", path="src/pkg/a.py", context=1)
    assert out.content.startswith("src/pkg/a.py-1- def alpha():\nsrc/pkg/a.py:2:     return 1")


async def test_grep_bad_regex_is_a_clear_error(make_ctx: MakeCtx, repo: Path) -> None:
    out = await call(GREP, make_ctx, pattern="foo(")
    assert out.status is ToolStatus.ERROR
    assert "does not compile" in out.content


async def test_grep_counts_what_it_left_out(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 50)
    out = await call(GREP, make_ctx, pattern="hit", max_matches=10)
    assert out.content.count("many.txt:") == 10
    assert "[40 more matching lines not shown; narrow the search]" in out.content
    assert out.details["matches"] == 50


async def test_grep_missing_path(make_ctx: MakeCtx, tmp_path: Path) -> None:
    out = await call(GREP, make_ctx, pattern="x", path="nope")
    assert out.status is ToolStatus.ERROR
    assert "no such file or directory: nope" in out.content


async def test_glob_matches_across_directories(make_ctx: MakeCtx, repo: Path) -> None:
    out = await call(GLOB, make_ctx, pattern="**/*.py")
    assert sorted(out.content.splitlines()[:2]) == ["src/b.py", "src/pkg/a.py"]
    assert "build/out.py" not in out.content
    with_ignored = await call(GLOB, make_ctx, pattern="*.py", include_ignored=True)
    assert "build/out.py" in with_ignored.content


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a/b/c.py", True),
        ("src/*.py", "src/a/b.py", False),
        ("src/**/*.py", "src/a/b.py", True),
        ("src/**/*.py", "src/b.py", True),
        ("*.{js,ts}", "x/y.ts", True),
        ("test_?.py", "test_1.py", True),
        ("[!a]*.py", "abc.py", False),
    ],
)
def test_glob_patterns(pattern: str, path: str, expected: bool) -> None:
    assert bool(walk.glob_regex(pattern).match(path)) is expected


async def test_list_dir_tree(make_ctx: MakeCtx, repo: Path) -> None:
    out = await call(LS, make_ctx, depth=3)
    lines = out.content.splitlines()
    assert lines[0] == "./"
    assert "  src/" in lines
    assert "      a.py (26 B)" in lines
    assert not any("build" in line for line in lines)
    assert "[3 entries ignored by .gitignore not shown]" in out.content


async def test_list_dir_on_a_file(make_ctx: MakeCtx, repo: Path) -> None:
    out = await call(LS, make_ctx, path="keep.log")
    assert out.status is ToolStatus.ERROR
    assert "is a file, not a directory" in out.content


async def test_grep_is_cancelled_mid_walk(
    make_ctx: MakeCtx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for d in range(20):
        (tmp_path / f"d{d}").mkdir()
        for f in range(50):
            (tmp_path / f"d{d}" / f"f{f}.txt").write_text("x\n")
    monkeypatch.setattr(walk, "CANCEL_CHECK_EVERY", 1)
    seen = 0
    real_iter = walk.Walker.__iter__

    def counting(self: walk.Walker) -> Any:
        nonlocal seen
        for entry in real_iter(self):
            seen += 1
            yield entry

    monkeypatch.setattr(walk.Walker, "__iter__", counting)
    returned = False

    async def run() -> None:
        nonlocal returned
        await call(GREP, make_ctx, pattern="never")
        returned = True

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await until(lambda: seen > 0, poll_s=0.001)
            nursery.cancel_scope.cancel(reason="test cancels the search")
    assert not returned
    assert seen < 1020
