from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolOutput
from rawtrio.tools.edit_file import edit_file_tool
from rawtrio.tools.read_file import read_file_tool
from rawtrio.tools.settings import ToolSettings
from rawtrio.tools.write_file import write_file_tool
from tests.tools.conftest import MakeCtx

READ, WRITE, EDIT = read_file_tool(), write_file_tool(), edit_file_tool()


async def call(tool: Tool, make_ctx: MakeCtx, **args: Any) -> ToolOutput:
    return await tool.handler(make_ctx(), freeze(args))


# --- read_file -------------------------------------------------------------------------


async def test_read_numbers_lines(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    out = await call(READ, make_ctx, path="a.txt")
    assert out.status is ToolStatus.OK
    assert out.content.startswith("     1\tone\n     2\ttwo\n     3\tthree\n[lines 1-3 of 3; ")
    assert out.details["total_lines"] == 3


async def test_read_window_says_how_to_continue(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"l{i}\n" for i in range(1, 11)))
    out = await call(READ, make_ctx, path=str(tmp_path / "a.txt"), offset=3, limit=2)
    assert out.content.startswith("     3\tl3\n     4\tl4\n")
    assert "[lines 3-4 of 10; sha256=" in out.content
    assert "6 more lines: call read_file with offset=5 to read on" in out.content


async def test_read_stops_at_the_output_cap(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 90 + "\n" * 1 + ("y" * 90 + "\n") * 999)
    ctx = make_ctx(settings=ToolSettings(output_cap=1000))
    out = await READ.handler(ctx, freeze({"path": "big.txt"}))
    assert len(out.content) < 1300
    assert "output size limit reached" in out.content
    assert f"offset={out.details['last_line'] + 1}" in out.content


async def test_read_offset_past_end_is_an_error(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    out = await call(READ, make_ctx, path="a.txt", offset=5)
    assert out.status is ToolStatus.ERROR
    assert "offset 5 is past the end of a.txt, which has 1 lines" in out.content


async def test_read_empty_file(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("")
    out = await call(READ, make_ctx, path="e.txt")
    assert out.status is ToolStatus.OK
    assert out.content == "(e.txt is empty)"


async def test_read_missing_file(make_ctx: MakeCtx) -> None:
    out = await call(READ, make_ctx, path="nope.txt")
    assert out.status is ToolStatus.ERROR
    assert out.content == "no such file or directory: nope.txt"


async def test_read_directory(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    out = await call(READ, make_ctx, path="d")
    assert out.status is ToolStatus.ERROR
    assert "d is a directory" in out.content


async def test_read_binary_file(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"\x7fELF\x00\x01\x02")
    out = await call(READ, make_ctx, path="b.bin")
    assert out.status is ToolStatus.ERROR
    assert "binary file" in out.content


async def test_read_non_utf8_text_is_replaced_with_a_note(
    make_ctx: MakeCtx, tmp_path: Path
) -> None:
    (tmp_path / "l1.txt").write_bytes("café\n".encode("latin-1"))
    out = await call(READ, make_ctx, path="l1.txt")
    assert out.status is ToolStatus.OK
    assert "caf\ufffd" in out.content
    assert "not valid UTF-8" in out.content


async def test_read_cuts_very_long_lines(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("z" * 50_000 + "\nend\n")
    out = await call(READ, make_ctx, path="long.txt")
    assert "…[line cut]" in out.content
    assert "     2\tend" in out.content
    assert out.details["total_lines"] == 2


async def test_read_invalid_path_is_an_error(make_ctx: MakeCtx) -> None:
    out = await call(READ, make_ctx, path="bad\x00name")
    assert out.status is ToolStatus.ERROR


# --- write_file ------------------------------------------------------------------------


async def test_write_creates_file_and_parents(make_ctx: MakeCtx, tmp_path: Path) -> None:
    out = await call(WRITE, make_ctx, path="a/b/c.txt", content="hi\nthere\n")
    assert out.status is ToolStatus.OK
    assert out.content.startswith("created a/b/c.txt (now 9 bytes, 2 lines)\n")
    assert "+hi\n+there" in out.content
    assert (tmp_path / "a/b/c.txt").read_text() == "hi\nthere\n"
    assert [p.name for p in (tmp_path / "a/b").iterdir()] == ["c.txt"]  # no temp left


async def test_write_overwrites_and_keeps_mode(make_ctx: MakeCtx, tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_text("old")
    target.chmod(0o750)
    out = await call(WRITE, make_ctx, path="run.sh", content="new")
    assert out.content.startswith("overwrote run.sh")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


async def test_write_through_a_symlink_keeps_the_link(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    await call(WRITE, make_ctx, path="link.txt", content="new")
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new"


async def test_write_to_a_directory_is_an_error(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    out = await call(WRITE, make_ctx, path="d", content="x")
    assert out.status is ToolStatus.ERROR
    assert "d is a directory" in out.content


async def test_write_below_a_file_is_an_error(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    out = await call(WRITE, make_ctx, path="f/child.txt", content="x")
    assert out.status is ToolStatus.ERROR
    assert out.content.startswith("could not write:")


async def test_write_lone_surrogate_is_an_error(make_ctx: MakeCtx, tmp_path: Path) -> None:
    out = await call(WRITE, make_ctx, path="s.txt", content="bad \ud800")
    assert out.status is ToolStatus.ERROR
    assert not (tmp_path / "s.txt").exists()


# --- edit_file -------------------------------------------------------------------------


async def test_edit_replaces_once_and_shows_a_diff(make_ctx: MakeCtx, tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("def f():\n    return 1\n")
    target.chmod(0o640)
    out = await call(EDIT, make_ctx, path="m.py", old_text="return 1", new_text="return 2")
    assert out.status is ToolStatus.OK
    assert target.read_text() == "def f():\n    return 2\n"
    assert "edited m.py: replaced 1 occurrence" in out.content
    assert "--- a/m.py\n+++ b/m.py\n" in out.content
    assert "-    return 1\n+    return 2" in out.content
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


async def test_edit_not_found_leaves_file_unchanged(make_ctx: MakeCtx, tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("a = 1\n")
    before = target.stat().st_mtime_ns
    out = await call(EDIT, make_ctx, path="m.py", old_text="b = 1", new_text="b = 2")
    assert out.status is ToolStatus.ERROR
    assert "old_text was not found in m.py" in out.content
    assert "the file was not changed" in out.content
    assert target.read_text() == "a = 1\n"
    assert target.stat().st_mtime_ns == before


async def test_edit_whitespace_mismatch_gets_a_hint(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("if x:\n    y()\n")
    out = await call(EDIT, make_ctx, path="m.py", old_text="if x:\n  y()", new_text="z")
    assert "matches when whitespace is ignored" in out.content


async def test_edit_found_twice_reports_count_and_changes_nothing(
    make_ctx: MakeCtx, tmp_path: Path
) -> None:
    target = tmp_path / "m.txt"
    target.write_text("x\nx\n")
    out = await call(EDIT, make_ctx, path="m.txt", old_text="x", new_text="y")
    assert out.status is ToolStatus.ERROR
    assert "old_text occurs 2 times in m.txt" in out.content
    assert "replace_all" in out.content
    assert target.read_text() == "x\nx\n"


async def test_edit_replace_all(make_ctx: MakeCtx, tmp_path: Path) -> None:
    target = tmp_path / "m.txt"
    target.write_text("x\nx\n")
    out = await call(EDIT, make_ctx, path="m.txt", old_text="x", new_text="y", replace_all=True)
    assert out.status is ToolStatus.OK
    assert "replaced 2 occurrences" in out.content
    assert target.read_text() == "y\ny\n"


async def test_edit_crlf_file(make_ctx: MakeCtx, tmp_path: Path) -> None:
    target = tmp_path / "w.txt"
    target.write_bytes(b"one\r\ntwo\r\n")
    out = await call(EDIT, make_ctx, path="w.txt", old_text="one\ntwo", new_text="1\n2")
    assert out.status is ToolStatus.OK
    assert target.read_bytes() == b"1\r\n2\r\n"


async def test_edit_missing_file(make_ctx: MakeCtx) -> None:
    out = await call(EDIT, make_ctx, path="nope.py", old_text="a", new_text="b")
    assert out.status is ToolStatus.ERROR
    assert out.content.startswith("no such file or directory: nope.py")


async def test_edit_directory(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    out = await call(EDIT, make_ctx, path="d", old_text="a", new_text="b")
    assert out.status is ToolStatus.ERROR
    assert "is a directory" in out.content


async def test_edit_binary_and_non_utf8_are_refused(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"a\x00b")
    (tmp_path / "l1.txt").write_bytes("café a".encode("latin-1"))
    binary = await call(EDIT, make_ctx, path="b.bin", old_text="a", new_text="c")
    latin = await call(EDIT, make_ctx, path="l1.txt", old_text="a", new_text="c")
    assert "binary file" in binary.content
    assert "not valid UTF-8" in latin.content
    assert (tmp_path / "b.bin").read_bytes() == b"a\x00b"
    assert (tmp_path / "l1.txt").read_bytes() == "café a".encode("latin-1")


async def test_edit_same_text_is_an_error(make_ctx: MakeCtx, tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("x\n")
    out = await call(EDIT, make_ctx, path="m.txt", old_text="x", new_text="x")
    assert out.status is ToolStatus.ERROR
    assert "nothing to change" in out.content


async def test_any_oserror_becomes_an_error_result(make_ctx: MakeCtx) -> None:
    name = "n" * 300  # longer than any file system allows: ENAMETOOLONG
    outputs = [
        await call(READ, make_ctx, path=name),
        await call(WRITE, make_ctx, path=name, content="x"),
        await call(EDIT, make_ctx, path=name, old_text="a", new_text="b"),
    ]
    for out in outputs:
        assert out.status is ToolStatus.ERROR
        assert "File name too long" in out.content
