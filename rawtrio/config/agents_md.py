"""AGENTS.md discovery: the project's instructions for agents, added to the system prompt.

Every `AGENTS.md` from the repository root (the nearest folder holding `.git`) down to the
working directory is used, outermost first, so the most specific instructions come last.
Outside a repository only the working directory's file is read. A file is cut at
`MAX_AGENTS_MD_BYTES`; bytes that are not UTF-8 are replaced.

The files come with the project, so they are read through `safe_read` confined to the
project (the repository root, else the working directory): an `AGENTS.md` that is a
symlink out of the project (`-> /proc/self/environ`, `-> ~/.ssh/id_rsa`), a FIFO or a
device is refused with a ConfigError (exit 2) naming it, never read into the prompt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rawtrio.config.loader import folders_up_to_root, project_root
from rawtrio.config.safe_read import read_head

AGENTS_MD: Final = "AGENTS.md"
MAX_AGENTS_MD_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class AgentsFile:
    path: Path
    text: str
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class AgentsFiles:
    files: tuple[AgentsFile, ...]
    notices: tuple[str, ...] = ()

    def prompt_section(self) -> str:
        """The text added to the system prompt ("" when there are no files)."""
        parts = []
        for f in self.files:
            cut = "\n[… cut: the file is longer than rawtrio reads]" if f.truncated else ""
            parts.append(f"Instructions from {f.path}:\n\n{f.text.strip()}{cut}")
        return "\n\n".join(parts)


def find_agents_files(cwd: Path) -> AgentsFiles:
    """The project's AGENTS.md files; UnsafeFileError (exit 2) for one that breaks the
    `safe_read` policy."""
    files: list[AgentsFile] = []
    root = project_root(cwd)
    for folder in reversed(folders_up_to_root(cwd)):
        path = folder / AGENTS_MD
        # lexists, not is_file: a FIFO, a device or a dangling link is reported, not skipped.
        if not os.path.lexists(path) or path.is_dir():
            continue
        raw, cut = read_head(path, limit=MAX_AGENTS_MD_BYTES, within=root, what="AGENTS.md")
        text = raw.decode("utf-8", errors="replace")
        files.append(AgentsFile(path, text, truncated=cut))
    return AgentsFiles(tuple(files))
