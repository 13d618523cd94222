"""The approval prompt's preview of a call (rawtrio.tui.permission.call_preview)."""

from __future__ import annotations

from rawtrio.tui.permission import call_preview


def test_an_edit_is_previewed_as_a_unified_diff() -> None:
    markup = call_preview("edit_file", {"path": "a.py", "old": "x = 1\ny\n", "new": "x = 2\ny\n"})
    assert ("diff del", "-x = 1") in markup
    assert ("diff add", "+x = 2") in markup
    assert any(isinstance(m, tuple) and m[0] == "diff hunk" for m in markup)


def test_an_edit_that_changes_nothing_says_so() -> None:
    assert call_preview("edit_file", {"path": "a.py", "old": "same", "new": "same"}) == [
        ("dim", "(no change)")
    ]


def test_a_command_is_shown_as_typed() -> None:
    assert call_preview("bash", {"command": "ls -l"}) == [("perm command", "$ ls -l")]
