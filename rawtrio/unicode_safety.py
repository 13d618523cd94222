"""Text that cannot be encoded: found at the edges, replaced on the way out.

A Python `str` can hold code points that no UTF-8 writer accepts: lone surrogates
(U+D800–U+DFFF). They come in two ways. JSON escapes (`"\\ud800"`) decode to them, so an
ACP frame or a model's stream can carry one; and the interpreter decodes command-line
arguments with `surrogateescape`, so each byte of invalid UTF-8 in `argv` becomes one
(U+DC80–U+DCFF). Written to a pipe, a socket, a terminal or SQLite, such a string raises
`UnicodeEncodeError` — which, unhandled, ends whatever was writing.

The policy: input rawtrio acts on (an ACP request, a prompt) is checked at the edge and
refused with an error naming where the bad text is (`find_lone_surrogate`,
`describe_undecodable`); output built from text rawtrio does not control (a model's
reply, an echoed value) is made writable by replacing each lone surrogate with U+FFFD
(`replace_lone_surrogates`, `scrub_json`), so one bad character never costs a connection.
"""

from __future__ import annotations

import re
from typing import Any, Final, TextIO

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
#: A JSON `\\ud800`…`\\udfff` escape (the surrogate range): the only way JSON text decoded from
#: valid UTF-8 can yield a lone surrogate, so frames without one need no deeper look.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
REPLACEMENT: Final = "\ufffd"


def has_lone_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def replace_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (unchanged, and not copied,
    when it has none)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def scrub_json(value: Any) -> Any:
    """A JSON value with every lone surrogate in its strings (keys included) replaced."""
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    if isinstance(value, dict):
        return {replace_lone_surrogates(k): scrub_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_json(v) for v in value]
    return value


def may_hold_lone_surrogate(json_text: str) -> bool:
    """Whether JSON text (decoded from valid UTF-8) can decode to a lone surrogate."""
    return _SURROGATE_ESCAPE.search(json_text) is not None


def find_lone_surrogate(value: Any, path: str) -> tuple[str, str] | None:
    """The first string in a JSON value holding a lone surrogate: its path (`params.
    prompt[0].text`; a key is named by its escaped spelling) and the surrogate as an
    escape (`\\ud800`), both safe to write anywhere. None when there is none."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        return (path, f"\\u{ord(found.group()):04x}") if found else None
    if isinstance(value, dict):
        for key, item in value.items():
            if has_lone_surrogate(key):
                return find_lone_surrogate(key, f"{path}[{key!a}] (a key)")
            hit = find_lone_surrogate(item, f"{path}.{key}" if path else key)
            if hit is not None:
                return hit
        return None
    if isinstance(value, list):
        for i, item in enumerate(value):
            hit = find_lone_surrogate(item, f"{path}[{i}]")
            if hit is not None:
                return hit
    return None


def describe_undecodable(text: str, what: str) -> str | None:
    """Why `text` (from argv or a file decoded with `surrogateescape`) is not valid
    Unicode, as a sentence naming `what` and the first bad byte or code point; None when
    it is valid."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    code = ord(found.group())
    at = found.start()
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: one undecodable byte
        return (
            f"{what} is not valid UTF-8 (byte 0x{code - 0xDC00:02x} at character {at}); "
            "rawtrio takes text in UTF-8"
        )
    return f"{what} holds a lone surrogate (\\u{code:04x} at character {at}), which is not text"


def replace_unwritable(stream: TextIO) -> None:
    """The last line of defence for a terminal or pipe: a character the stream's encoding
    cannot represent (a lone surrogate, or any non-ASCII one on an ASCII locale) is
    written as `?` instead of raising. Renderers replace lone surrogates with U+FFFD
    themselves where they can; this catches the rest."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")


__all__ = [
    "REPLACEMENT",
    "describe_undecodable",
    "find_lone_surrogate",
    "has_lone_surrogate",
    "may_hold_lone_surrogate",
    "replace_lone_surrogates",
    "replace_unwritable",
    "scrub_json",
]
