"""Streaming-safe Markdown: no raw markup for tokens that are not closed yet."""

from __future__ import annotations

import pytest

from rawtrio.tui.markdown import Markup, render


def plain(markup: list[Markup]) -> str:
    return "".join(m if isinstance(m, str) else m[1] for m in markup)


def attrs(markup: list[Markup], text: str) -> set[str]:
    return {m[0] for m in markup if isinstance(m, tuple) and text in m[1] and m[0]}


@pytest.mark.parametrize(
    ("partial", "shown"),
    [
        ("Hello **wor", "Hello wor"),
        ("Hello **", "Hello "),
        ("run `ls -", "run ls -"),
        ("see [the docs](https://exa", "see the docs"),
        ("see [the do", "see the do"),
        ("an *emph", "an emph"),
    ],
)
def test_an_unclosed_token_never_shows_its_markup_while_streaming(partial: str, shown: str) -> None:
    assert plain(render(partial, final=False)) == shown


def test_an_unclosed_token_styles_the_rest_of_the_line() -> None:
    assert "md strong" in attrs(render("Hello **wor", final=False), "wor")


def test_a_finished_reply_shows_unmatched_markers_literally() -> None:
    assert plain(render("2 * 3 and a lone ` tick", final=True)) == "2 * 3 and a lone ` tick"


def test_block_elements() -> None:
    text = "# Title\n\n- one\n  - nested\n1. first\n> quoted\n\n[site](https://x.org)"
    out = plain(render(text))
    assert out.splitlines() == [
        "Title",
        "",
        "• one",
        "  • nested",
        "1. first",
        "▌ quoted",
        "",
        "site (https://x.org)",
    ]


def test_an_open_code_fence_renders_as_code_without_the_fence() -> None:
    markup = render("Look:\n```python\ndef f():\n    return 1", final=False)
    assert "```" not in plain(markup)
    assert "def f():" in plain(markup)
    assert "code kw" in attrs(markup, "def")  # highlighted while it streams


def test_a_table_is_aligned_in_columns() -> None:
    out = plain(render("| a | long header |\n|---|---|\n| 1 | 2 |")).splitlines()
    assert out[0] == "│ a │ long header │"
    assert out[2] == "│ 1 │ 2           │"


def test_a_reply_streamed_in_pieces_renders_as_the_whole_text_does() -> None:
    from rawtrio.tui.blocks import AssistantBlock

    text = (
        "# Plan\n\nFirst **bold** para.\n\n```python\nx = 1\n\ny = 2\n```\n\n"
        "- a\n- b\n\n| h | i |\n|---|---|\n| 1 | 2 |\n\nlast *one*"
    )
    block = AssistantBlock()
    for n in range(0, len(text), 3):
        block.append(text[n : n + 3])
        assert "**" not in plain(block.markup())
    block.finish()
    assert plain(block.markup()) == plain(render(text))
