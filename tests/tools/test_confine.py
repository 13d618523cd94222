from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.tools import paths
from rawtrio.tools.base import Tool, ToolOutput
from rawtrio.tools.read_file import read_file_tool
from rawtrio.tools.settings import ToolSettings
from rawtrio.tools.write_file import write_file_tool
from tests.tools.conftest import MakeCtx

CONFINED = ToolSettings(output_cap=4000, sigterm_grace_s=0.2, confine=True)


@pytest.fixture(params=["openat2", "realpath"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "openat2":
        if not paths.openat2_available():
            if os.environ.get("CI") == "true":
                pytest.fail("openat2 is required under CI")
            pytest.skip("openat2 is not available here")
    else:
        monkeypatch.setattr(paths._OPENAT2, "available", False)
    return str(request.param)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("outside\n")
    (work / "inside.txt").write_text("inside\n")
    (work / "out_link").symlink_to(tmp_path / "secret.txt")
    (work / "out_dir").symlink_to(tmp_path)
    (work / "in_link").symlink_to("inside.txt")
    (work / "dangling").symlink_to("../new-outside.txt")
    return work


async def call(tool: Tool, make_ctx: MakeCtx, cwd: Path, **args: Any) -> ToolOutput:
    return await tool.handler(make_ctx(cwd=cwd, settings=CONFINED), freeze(args))


@pytest.mark.parametrize(
    "path", ["../secret.txt", "out_link", "out_dir/secret.txt", "sub/../../secret.txt"]
)
async def test_reads_outside_are_refused(
    mode: str, tree: Path, make_ctx: MakeCtx, path: str
) -> None:
    out = await call(read_file_tool(), make_ctx, tree, path=path)
    assert out.status is ToolStatus.ERROR
    assert "resolves outside the working directory" in out.content


async def test_absolute_path_outside_is_refused(mode: str, tree: Path, make_ctx: MakeCtx) -> None:
    out = await call(read_file_tool(), make_ctx, tree, path=str(tree.parent / "secret.txt"))
    assert "resolves outside the working directory" in out.content


@pytest.mark.parametrize("path", ["inside.txt", "in_link", "./inside.txt"])
async def test_paths_inside_are_allowed(
    mode: str, tree: Path, make_ctx: MakeCtx, path: str
) -> None:
    out = await call(read_file_tool(), make_ctx, tree, path=path)
    assert out.status is ToolStatus.OK
    assert "inside" in out.content


async def test_absolute_path_inside_is_allowed(mode: str, tree: Path, make_ctx: MakeCtx) -> None:
    out = await call(read_file_tool(), make_ctx, tree, path=str(tree / "inside.txt"))
    assert out.status is ToolStatus.OK


@pytest.mark.parametrize("path", ["dangling", "out_dir/new.txt", "../new.txt"])
async def test_writes_through_escapes_are_refused(
    mode: str, tree: Path, make_ctx: MakeCtx, path: str
) -> None:
    before = sorted(p.name for p in tree.parent.iterdir())
    out = await call(write_file_tool(), make_ctx, tree, path=path, content="x")
    assert out.status is ToolStatus.ERROR
    assert "resolves outside the working directory" in out.content
    assert sorted(p.name for p in tree.parent.iterdir()) == before


async def test_new_file_in_a_new_directory_inside_is_allowed(
    mode: str, tree: Path, make_ctx: MakeCtx
) -> None:
    out = await call(write_file_tool(), make_ctx, tree, path="a/b/new.txt", content="x")
    assert out.status is ToolStatus.OK
    assert (tree / "a/b/new.txt").read_text() == "x"


async def test_confinement_is_off_by_default(tree: Path, make_ctx: MakeCtx) -> None:
    out = await read_file_tool().handler(make_ctx(cwd=tree), freeze({"path": "../secret.txt"}))
    assert out.status is ToolStatus.OK
