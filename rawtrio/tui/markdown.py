"""Markdown to urwid markup, safe for text that is still streaming.

The chat renders an assistant reply again each time the screen is drawn while it streams,
from the whole text received so far. `render(text, final=False)` never shows the raw markup
of a token that is not closed yet: an open `**` renders the rest of the line bold, an open
`` ` `` as code, an open `[label](` as the label, and an open code fence as a code block.
Once the reply is complete (`final=True`) an unmatched marker is shown as the character it
is, as Markdown does.

Supported: ATX headings, emphasis and strong emphasis, inline code, links, bullet and
numbered lists (nested by indentation), block quotes, horizontal rules, pipe tables and
fenced code blocks with syntax highlighting (pygments). Everything else is plain text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

#: A piece of urwid markup: text, or (attribute, text).
Markup = str | tuple[str, str]

_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+#.-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)([-*+])\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d{1,9}[.)])\s+(.*)$")
_QUOTE = re.compile(r"^\s*>\s?(.*)$")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")

#: pygments token type (by name prefix) → palette attribute.
_TOKEN_ATTRS = (
    ("Token.Keyword", "code kw"),
    ("Token.Name.Builtin", "code kw"),
    ("Token.Name.Function", "code fn"),
    ("Token.Name.Class", "code fn"),
    ("Token.Literal.String", "code str"),
    ("Token.Literal.Number", "code num"),
    ("Token.Comment", "code com"),
    ("Token.Operator.Word", "code kw"),
)


def render(text: str, *, final: bool = True) -> list[Markup]:
    """The markup of `text` as a list for one `urwid.Text` (lines joined by newlines)."""
    out: list[Markup] = []
    lines = text.split("\n")
    i = 0
    first = True

    def newline() -> None:
        nonlocal first
        if not first:
            out.append("\n")
        first = False

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            marker, lang = fence.group(1), fence.group(2)
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence (or past the end while it streams)
            if not final and i > len(lines) and body and body[-1] == "":
                body.pop()
            newline()
            out.extend(_code_block(body, lang))
            continue
        if _is_table_start(lines, i):
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                if not _TABLE_SEP.match(lines[i]):
                    rows.append(_cells(lines[i]))
                i += 1
            newline()
            out.extend(_table(rows, final))
            continue
        newline()
        out.extend(_block_line(line, final=final or i < len(lines) - 1))
        i += 1
    return out


def fences_balanced(text: str) -> bool:
    """Whether `text` ends outside a fenced code block."""
    marker: str | None = None
    for line in text.split("\n"):
        fence = _FENCE.match(line)
        if fence is None:
            continue
        if marker is None:
            marker = fence.group(1)
        elif line.strip().startswith(marker):
            marker = None
    return marker is None


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        lines[i].strip().startswith("|")
        and i + 1 < len(lines)
        and bool(_TABLE_SEP.match(lines[i + 1]))
        and "-" in lines[i + 1]
    )


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def _plain(markup: list[Markup]) -> str:
    return "".join(m if isinstance(m, str) else m[1] for m in markup)


def _table(rows: list[list[str]], final: bool) -> list[Markup]:
    cells = [[inline(c, final=final) for c in row] for row in rows]
    columns = max(len(r) for r in cells)
    widths = [
        max((len(_plain(r[c])) for r in cells if c < len(r)), default=0) for c in range(columns)
    ]
    out: list[Markup] = []
    for n, row in enumerate(cells):
        if n:
            out.append("\n")
        for c in range(columns):
            out.append(("md table", "│ " if c == 0 else " │ "))
            content = row[c] if c < len(row) else []
            attr = "md strong" if n == 0 else None
            out.extend((attr, _plain([m])) if attr else m for m in content)
            out.append(" " * (widths[c] - len(_plain(content))))
        out.append(("md table", " │"))
        if n == 0:
            out.append("\n")
            out.append(("md table", "├" + "┼".join("─" * (w + 2) for w in widths) + "┤"))
    return out


def _block_line(line: str, *, final: bool) -> list[Markup]:
    heading = _HEADING.match(line)
    if heading:
        return [("md h", _plain(inline(heading.group(2), final=final)))]
    if _RULE.match(line):
        return [("md rule", "─" * 40)]
    bullet = _BULLET.match(line)
    if bullet:
        indent = " " * len(bullet.group(1))
        return [indent, ("md bullet", "• "), *inline(bullet.group(3), final=final)]
    numbered = _NUMBERED.match(line)
    if numbered:
        indent = " " * len(numbered.group(1))
        return [
            indent,
            ("md bullet", numbered.group(2) + " "),
            *inline(numbered.group(3), final=final),
        ]
    quote = _QUOTE.match(line)
    if quote:
        return [("md quote", "▌ "), *(_with_attr(inline(quote.group(1), final=final), "md quote"))]
    return inline(line, final=final)


def _with_attr(markup: list[Markup], attr: str) -> list[Markup]:
    return [(attr, m) if isinstance(m, str) else m for m in markup]


def inline(text: str, *, final: bool = True, attr: str | None = None) -> list[Markup]:
    """Inline markup of one line: emphasis, strong, code spans and links.

    While streaming (`final=False`) a marker that is not closed yet styles the rest of
    the line instead of showing up as a raw character."""
    out: list[Markup] = []
    plain: list[str] = []

    def flush() -> None:
        if plain:
            out.append((attr, "".join(plain)) if attr else "".join(plain))
            plain.clear()

    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n and text[i + 1] in "\\`*_[]()#|":
            plain.append(text[i + 1])
            i += 2
            continue
        if ch == "`":
            end = text.find("`", i + 1)
            if end != -1 or not final:
                flush()
                out.append(("md code", text[i + 1 : end if end != -1 else n]))
                i = end + 1 if end != -1 else n
                continue
        elif ch in "*_" and _opens(text, i):
            double = text.startswith(ch * 2, i)
            marker = ch * 2 if double else ch
            end = _closing(text, i + len(marker), marker)
            if end != -1 or not final:
                inner = text[i + len(marker) : end if end != -1 else n]
                if inner.strip(ch):
                    flush()
                    style = "md strong" if double else "md em"
                    out.extend(inline(inner, final=final, attr=style))
                    i = end + len(marker) if end != -1 else n
                    continue
                if end == -1:  # only markers so far ("**" at the end of a stream)
                    i = n
                    continue
        elif ch == "[":
            close = text.find("]", i + 1)
            if close != -1 and text.startswith("(", close + 1):
                paren = text.find(")", close + 2)
                if paren != -1 or not final:
                    flush()
                    label = text[i + 1 : close]
                    out.append(("md link", label))
                    if paren != -1:
                        url = text[close + 2 : paren]
                        if url and url != label:
                            out.append(("md url", f" ({url})"))
                    i = paren + 1 if paren != -1 else n
                    continue
            elif close == -1 and not final:
                flush()
                out.append(("md link", text[i + 1 :]))
                i = n
                continue
        plain.append(ch)
        i += 1
    flush()
    return out


def _opens(text: str, i: int) -> bool:
    """An emphasis marker opens when followed by a non-space; `_` also not inside a word."""
    ch = text[i]
    j = i + 1
    while j < len(text) and text[j] == ch:
        j += 1
    if j < len(text) and text[j].isspace():
        return False
    return not (ch == "_" and i > 0 and text[i - 1].isalnum())


def _closing(text: str, start: int, marker: str) -> int:
    j = start
    while True:
        j = text.find(marker, j)
        if j == -1:
            return -1
        single = len(marker) == 1
        doubled = text.startswith(marker * 2, j)
        if j > start and not text[j - 1].isspace() and not (single and doubled):
            return j
        j += 2 if single and doubled else len(marker)


def _code_block(body: list[str], lang: str) -> list[Markup]:
    out: list[Markup] = []
    tokens = _highlight("\n".join(body), lang) if body else []
    out.append(("code", "  "))
    for attr, value in tokens:
        parts = value.split("\n")
        for k, part in enumerate(parts):
            if k:
                out.append("\n")
                out.append(("code", "  "))
            if part:
                out.append((attr, part))
    if not body:
        out.append(("code", ""))
    return out


@lru_cache(maxsize=64)
def _lexer(lang: str) -> Any:
    from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]

    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return get_lexer_by_name("text", stripnl=False, ensurenl=False)


def _highlight(code: str, lang: str) -> list[tuple[str, str]]:
    if not lang:  # plain text: what Pygments' text lexer gives, without loading Pygments
        return [("code", code.replace("\r\n", "\n").replace("\r", "\n"))]
    out: list[tuple[str, str]] = []
    for token, value in _lexer(lang.lower()).get_tokens(code):
        name = str(token)
        attr = next((a for prefix, a in _TOKEN_ATTRS if name.startswith(prefix)), "code")
        if out and out[-1][0] == attr:
            out[-1] = (attr, out[-1][1] + value)
        else:
            out.append((attr, value))
    return out
