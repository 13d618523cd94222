"""Streaming-safe Markdown: no raw markup for tokens that are not closed yet."""

from __future__ import annotations

import json
import subprocess
import sys

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


BLOCK_WITHOUT_LANGUAGE = "Run this:\n\n```\nmake  test\r\n\tsecond line\n```\nDone."


def test_a_code_block_without_a_language_is_drawn_without_loading_pygments() -> None:
    """Pygments (~1 MB resident with its lexer index) loads at the first block that names a
    language; a block without one is drawn as its text lexer would draw it."""
    code = (
        "import sys, json\n"
        "from rawtrio.tui.markdown import render\n"
        f"markup = render({BLOCK_WITHOUT_LANGUAGE!r})\n"
        "print(json.dumps({'pygments': 'pygments' in sys.modules, 'markup': markup}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    found = json.loads(done.stdout)
    assert found["pygments"] is False
    with_text_lexer = render(BLOCK_WITHOUT_LANGUAGE.replace("```\n", "```text\n", 1))
    assert found["markup"] == json.loads(json.dumps(with_text_lexer))
    assert "make  test" in plain(with_text_lexer)
