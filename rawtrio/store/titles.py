"""A session's title from its first prompt, without asking a model."""

from __future__ import annotations

import re

MAX_TITLE = 60


def title_from_prompt(text: str, limit: int = MAX_TITLE) -> str:
    """The first line of substance, whitespace collapsed, cut at a word near `limit`."""
    for line in text.splitlines():
        words = " ".join(line.split())
        if re.search(r"\w", words):
            break
    else:
        return "untitled"
    if len(words) <= limit:
        return words
    cut = words[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:-") + "…"
