"""`/diff`: a turn's change set as a scrollable diff over the chat — in a real terminal
(tmux) after a turn on the fake model server, and the box's keys on their own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rawtrio.checkpoints.diff import FileDiff
from rawtrio.checkpoints.model import ChangeSet, NotCaptured
from rawtrio.tui.diff_view import DiffView, diff_lines
from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import Isolation
from tests.tui.support import Pane


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old_text": old, "new_text": new}}


SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "edit two files",
            "replies": [
                {"tool_calls": [edit("alpha.txt", "beta", "BETA")]},
                {"tool_calls": [edit("numbers.txt", "two\nthree", "TWO")]},
                {"text": "edited both"},
            ],
        },
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


@pytest.fixture(scope="module")
def edits_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(SCENARIO, tmp_path_factory.mktemp("diff-model")) as fake:
        yield fake


def test_diff_shows_the_turns_files_as_hunks_and_esc_closes_it(
    tmp_path: Path, edits_model: FakeModel
) -> None:
    iso = Isolation(tmp_path)
    iso.cwd.mkdir(parents=True)
    (iso.cwd / "alpha.txt").write_text("alpha\nbeta\ngamma\n")
    (iso.cwd / "numbers.txt").write_text("one\ntwo\nthree\nfour\n")
    args = ["--base-url", edits_model.base_url, "--sigterm-grace", "0.2"]
    pane = Pane.start(iso, *args, env={"ANTHROPIC_API_KEY": "test-key"})
    try:
        pane.wait_for("ready │")
        pane.type("/diff")
        pane.keys("Enter")
        pane.wait_for("/diff: no turn of this session has changed files yet")
        pane.type("edit two files")
        pane.keys("Enter")
        notice = pane.wait_for("2 files changed (+2 \u22123)")
        assert "checkpoint 1; /diff shows them, /undo puts them back" in notice
        pane.wait_for("ready │")
        pane.type("/diff")
        pane.keys("Enter")
        screen = pane.wait_for("Esc closes")
        rows = [line.strip("│ ").rstrip() for line in screen.splitlines()]
        assert "checkpoint 1: 2 files changed (+2 \u22123)" in screen
        start = rows.index("modified alpha.txt (+1 \u22121)")
        assert rows[start : start + 6] == [
            "modified alpha.txt (+1 \u22121)",
            "@@ -1,3 +1,3 @@",
            "alpha",
            "-beta",
            "+BETA",
            "gamma",
        ]
        start = rows.index("modified numbers.txt (+1 \u22122)")
        assert rows[start : start + 7] == [
            "modified numbers.txt (+1 \u22122)",
            "@@ -1,4 +1,3 @@",
            "one",
            "-two",
            "-three",
            "+TWO",
            "four",
        ]
        pane.keys("Escape")
        pane.wait_for(lambda s: "Esc closes" not in s, "the diff view closes")
        pane.type("/diff 2")
        pane.keys("Enter")
        pane.wait_for("/diff: this session has no checkpoint 2")
        pane.type("/quit")
        pane.keys("Enter")
        assert pane.wait_ended() == 0
    finally:
        pane.close()


def change_set(**fields: Any) -> ChangeSet:
    base: dict[str, Any] = {
        "session_id": "s",
        "turn_id": "t",
        "number": 3,
        "prompt": "p",
        "created_at": 0.0,
        "cwd": "/w",
        "files": (),
    }
    return ChangeSet(**{**base, **fields})


def text_of(view: DiffView, cols: int = 60) -> list[str]:
    canvas = view.render((cols,))
    return [row.decode().rstrip() for row in canvas.text]


def test_the_box_keeps_its_height_and_scrolls_by_line_page_and_file() -> None:
    diffs = [
        FileDiff(f"f{n}.txt", "modified", 0o644, 0o644, 1, 1, ("@@ -1 +1 @@", "-a", "+b"))
        for n in range(10)
    ]
    lines, starts = diff_lines(change_set(), diffs)
    assert len(lines) == 10 * 4 + 9  # header and three rows per file, a blank between
    assert starts == [n * 5 for n in range(10)]
    view = DiffView("title", lines, starts, lambda: 20)
    assert view.height() == 14
    rows = text_of(view)
    assert len(rows) == view.rows((60,)) == 16
    assert "lines 1\u201314 of 49" in rows[0]
    assert rows[1].rstrip("│").rstrip() == "│modified f0.txt (+1 \u22121)"
    assert {len(row) for row in rows} == {60}
    view.handle("down")
    assert view.top == 1
    view.handle("n")
    assert view.top == 5
    view.handle("page down")
    assert view.top == 18
    view.handle("p")
    assert view.top == 15
    view.handle("end")
    assert view.top == 49 - 14
    assert "lines 36\u201349 of 49" in text_of(view)[0]
    view.handle("home")
    assert view.top == 0
    view.handle("up")
    assert view.top == 0
    assert not view.closed
    view.handle("esc")
    assert view.closed


def test_a_short_diff_gets_a_short_box_and_says_what_is_not_shown() -> None:
    diffs = [
        FileDiff("img.png", "created", None, 0o644, notes=("new file, mode 644", "binary file")),
        FileDiff("run.sh", "mode", 0o644, 0o755, notes=("mode 644 \u2192 755",)),
    ]
    cs = change_set(cancelled=True, not_captured=(NotCaptured("huge.bin", "too large"),))
    lines, _ = diff_lines(cs, diffs)
    view = DiffView("t", lines, [], lambda: 40)
    rows = [r.strip("│ ") for r in text_of(view, 80)[1:-1]]
    assert rows == [
        "the turn was cancelled: this is what it changed up to the cut",
        "",
        "created img.png (+0 \u22120)",
        "new file, mode 644",
        "binary file",
        "",
        "mode run.sh",
        "mode 644 \u2192 755",
        "",
        "not captured: huge.bin (too large)",
    ]
