from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolOutput
from rawtrio.tools.edit_file import edit_file_tool
from rawtrio.tools.read_file import read_file_tool
from rawtrio.tools.write_file import write_file_tool
from tests.tools.conftest import MakeCtx

READ, WRITE, EDIT = read_file_tool(), write_file_tool(), edit_file_tool()


async def call(tool: Tool, make_ctx: MakeCtx, **args: Any) -> ToolOutput:
    return await tool.handler(make_ctx(), freeze(args))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_read_hash_covers_exactly_the_lines_shown(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\r\ntwo\nthree\nfour")
    out = await call(READ, make_ctx, path="a.txt", offset=2, limit=2)
    assert out.details["sha256"] == sha(b"two\nthree\n")
    span = sha(b"two\nthree\n")
    assert f"[lines 2-3 of 4; sha256={span}]" in out.content
    whole = await call(READ, make_ctx, path="a.txt")
    assert whole.details["sha256"] == sha(b"one\r\ntwo\nthree\nfour")


async def test_read_several_files_at_once(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    out = await call(READ, make_ctx, files=[{"path": "a.txt"}, {"path": "b.txt"}])
    assert out.status is ToolStatus.OK
    assert "==> a.txt <==\n     1\talpha" in out.content
    assert "==> b.txt <==\n     1\tbeta" in out.content
    assert [f["path"] for f in out.details["files"]] == ["a.txt", "b.txt"]


async def test_read_missing_file_suggests_close_names(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("x\n")
    out = await call(READ, make_ctx, path="config.yml")
    assert out.status is ToolStatus.ERROR
    assert "no such file or directory: config.yml" in out.content
    assert "config.yaml" in out.content


async def test_read_binary_file_names_its_type(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    out = await call(READ, make_ctx, path="img.png")
    assert out.status is ToolStatus.ERROR
    assert "img.png is a binary file (16 bytes, PNG image)" in out.content


async def test_read_a_directory_points_to_list_dir(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    out = await call(READ, make_ctx, path="d")
    assert out.status is ToolStatus.ERROR
    assert "use list_dir" in out.content


async def test_replace_lines_with_fresh_hash(make_ctx: MakeCtx, tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("a = 1\nb = 2\nc = 3\n")
    read = await call(READ, make_ctx, path="a.py")
    out = await call(
        EDIT,
        make_ctx,
        path="a.py",
        start_line=2,
        end_line=2,
        new_text="b = 20",
        sha256=read.details["sha256"],
        sha256_range=[1, 3],
    )
    assert out.status is ToolStatus.OK, out.content
    assert f.read_text() == "a = 1\nb = 20\nc = 3\n"
    assert "-b = 2\n+b = 20" in out.content


async def test_replace_lines_refuses_a_stale_read(make_ctx: MakeCtx, tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("a = 1\nb = 2\n")
    read = await call(READ, make_ctx, path="a.py", offset=2, limit=1)
    f.write_text("a = 1\nb = 3\n")  # changed behind the model's back
    out = await call(
        EDIT,
        make_ctx,
        path="a.py",
        start_line=2,
        end_line=2,
        new_text="x",
        sha256=read.details["sha256"],
    )
    assert out.status is ToolStatus.ERROR
    assert "changed since they were read" in out.content
    assert f.read_text() == "a = 1\nb = 3\n"


async def test_replace_lines_can_delete(make_ctx: MakeCtx, tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("keep\ndrop\nkeep2\n")
    out = await call(
        EDIT, make_ctx, path="a.txt", start_line=2, end_line=2, new_text="", sha256=sha(b"drop\n")
    )
    assert out.status is ToolStatus.OK
    assert f.read_text() == "keep\nkeep2\n"


async def test_expected_occurrences_must_match(make_ctx: MakeCtx, tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("x x x\n")
    out = await call(
        EDIT, make_ctx, path="a.txt", old_text="x", new_text="y", expected_occurrences=2
    )
    assert out.status is ToolStatus.ERROR
    assert "occurs 3 times" in out.content
    assert f.read_text() == "x x x\n"
    ok = await call(
        EDIT, make_ctx, path="a.txt", old_text="x", new_text="y", expected_occurrences=3
    )
    assert ok.status is ToolStatus.OK
    assert f.read_text() == "y y y\n"


async def test_edit_on_a_directory_changes_nothing(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    out = await call(EDIT, make_ctx, path="d", old_text="a", new_text="b")
    assert out.status is ToolStatus.ERROR
    assert "is a directory" in out.content


async def test_create_mode_refuses_an_existing_file(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    out = await call(WRITE, make_ctx, path="a.txt", content="new\n", mode="create")
    assert out.status is ToolStatus.ERROR
    assert "already exists" in out.content
    assert (tmp_path / "a.txt").read_text() == "old\n"


async def test_append_keeps_mode_and_shows_a_diff(make_ctx: MakeCtx, tmp_path: Path) -> None:
    f = tmp_path / "log.sh"
    f.write_text("one\n")
    os.chmod(f, 0o751)
    out = await call(WRITE, make_ctx, path="log.sh", content="two\n", mode="append")
    assert out.status is ToolStatus.OK
    assert f.read_text() == "one\ntwo\n"
    assert os.stat(f).st_mode & 0o777 == 0o751
    assert "+two" in out.content
    assert out.content.startswith("appended to log.sh")


async def test_overwrite_shows_a_diff(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    out = await call(WRITE, make_ctx, path="a.txt", content="new\n")
    assert "-old\n+new" in out.content
