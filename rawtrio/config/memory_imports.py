"""`@path` imports in memory files (CLAUDE.md, AGENTS.md), the way Claude Code reads them.

A memory file may pull in another with `@path` (`See @README.md`, `@docs/git.md`,
`@~/.claude/my-notes.md`): an `@` at the start of a line or after white space, followed by
the path up to the next white space. Trailing sentence punctuation is not part of it. A
relative path is taken against the folder of the file that holds it; `~/` is the home
folder. Inside fenced code blocks and `inline code` nothing is an import, so examples of
the syntax stay examples.

Imports nest at most `MAX_IMPORT_DEPTH` levels deep; a file already read is not read
again, so import cycles end. Where an imported file may lie is the caller's rule
(`rawtrio.config.agents_md`: inside the project for a project's files).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

#: Levels of `@path` imports followed (Claude Code's limit too).
MAX_IMPORT_DEPTH: Final = 5
_FENCE: Final = re.compile(r"^\s{0,3}(```|~~~)")
_INLINE_CODE: Final = re.compile(r"(`+).*?\1")
_IMPORT: Final = re.compile(r"(?:^|(?<=\s))@(\S+)")
_TRAILING: Final = ".,;:!?)]}\"'"


def import_refs(text: str) -> list[str]:
    """The `@path` references of a memory file, in order, each once."""
    refs: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        if m := _FENCE.match(line):
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is not None:
            continue
        for m in _IMPORT.finditer(_INLINE_CODE.sub(" ", line)):
            ref = m.group(1).rstrip(_TRAILING)
            if ref and ref not in refs:
                refs.append(ref)
    return refs


def resolve_ref(ref: str, folder: Path, home: Path) -> Path:
    """Where `@ref` in a file of `folder` points (not yet checked)."""
    if ref == "~" or ref.startswith("~/"):
        return home / ref[2:]
    path = Path(ref)
    return path if path.is_absolute() else folder / path
