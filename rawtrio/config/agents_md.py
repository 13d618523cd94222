"""AGENTS.md discovery: the project's instructions for agents, added to the system prompt.

Every `AGENTS.md` from the repository root (the nearest folder holding `.git`) down to the
working directory is used, outermost first, so the most specific instructions come last.
Outside a repository only the working directory's file is read. A file is cut at
`MAX_AGENTS_MD_BYTES`; one that cannot be read or decoded is skipped with a notice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rawtrio.config.loader import folders_up_to_root

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
    files: list[AgentsFile] = []
    notices: list[str] = []
    for folder in reversed(folders_up_to_root(cwd)):
        path = folder / AGENTS_MD
        if not path.is_file():
            continue
        try:
            with path.open("rb") as f:
                raw = f.read(MAX_AGENTS_MD_BYTES + 1)
            text = raw[:MAX_AGENTS_MD_BYTES].decode("utf-8", errors="replace")
        except OSError as e:
            notices.append(f"{path}: skipped, cannot read it ({e.strerror})")
            continue
        files.append(AgentsFile(path, text, truncated=len(raw) > MAX_AGENTS_MD_BYTES))
    return AgentsFiles(tuple(files), tuple(notices))
