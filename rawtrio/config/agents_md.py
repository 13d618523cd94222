"""Project memory: the instructions for agents a project (and the user) writes down,
added to the system prompt — AGENTS.md, and Claude Code's CLAUDE.md files.

Which files, in the order they enter the prompt (the most specific last):

1. the user's own `~/.claude/CLAUDE.md`;
2. in every folder from the repository root (the nearest folder holding `.git`) down to the
   working directory — outside a repository, the working directory only — `AGENTS.md`,
   `CLAUDE.md`, `.claude/CLAUDE.md` and `CLAUDE.local.md`, in that order (AGENTS.md first
   where both exist);
3. after each file, the files it imports with `@path` (`rawtrio.config.memory_imports`).

Each file is read once: a `CLAUDE.md` that is a symlink to `AGENTS.md` (a common way to
share one file between tools), or a file imported twice, enters the prompt at its first
place only. Files below the working directory are not read here: `NestedMemory` offers
them when the model reads a file in their folder, as Claude Code does.

A file is cut at `MAX_AGENTS_MD_BYTES`; bytes that are not UTF-8 are replaced. Files that
come with the project are read through `safe_read` confined to the project (the repository
root, else the working directory): one that is a symlink out of the project
(`-> /proc/self/environ`, `-> ~/.ssh/id_rsa`), a FIFO or a device is refused with a
ConfigError (exit 2) naming it, never read into the prompt. The user's own file may lie
anywhere (but never under /proc, /sys or /dev).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rawtrio.config.folders import folders_up_to_root, project_root
from rawtrio.config.safe_read import UnsafeFileError, read_head

AGENTS_MD: Final = "AGENTS.md"
#: The memory files of one folder, in the order they are used.
MEMORY_FILES: Final = (AGENTS_MD, "CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
#: The user's own memory file, under the home folder.
USER_MEMORY_FILE: Final = Path(".claude") / "CLAUDE.md"
MAX_AGENTS_MD_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class AgentsFile:
    path: Path
    text: str
    truncated: bool = False
    #: The memory file whose `@path` brought this one in (None: found by its name).
    imported_by: Path | None = None

    def label(self) -> str:
        """How `config check` and `/memory` list the file."""
        return (
            f"{self.path} (imported by {self.imported_by})" if self.imported_by else str(self.path)
        )


@dataclass(frozen=True, slots=True)
class AgentsFiles:
    files: tuple[AgentsFile, ...]
    notices: tuple[str, ...] = ()

    def prompt_section(self) -> str:
        """The text added to the system prompt ("" when there are no files)."""
        return "\n\n".join(memory_text(f) for f in self.files)

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(f.path for f in self.files)


def memory_text(f: AgentsFile) -> str:
    """One file as the model sees it."""
    cut = "\n[… cut: the file is longer than rawtrio reads]" if f.truncated else ""
    via = f" (imported by {f.imported_by})" if f.imported_by else ""
    return f"Instructions from {f.path}{via}:\n\n{f.text.strip()}{cut}"


def find_agents_files(cwd: Path, env: Mapping[str, str] | None = None) -> AgentsFiles:
    """The memory files for a session in `cwd` (module docstring); UnsafeFileError (exit 2)
    for a project file that breaks the `safe_read` policy. `env` supplies HOME (the
    session's; this process's when None)."""
    root = project_root(cwd)
    reader = _MemoryReader(root, home_folder(env))
    user_file = reader.home / USER_MEMORY_FILE
    if os.path.lexists(user_file):
        reader.add(user_file, within=None)
    for folder in reversed(folders_up_to_root(cwd)):
        for name in MEMORY_FILES:
            path = folder / name
            # lexists, not is_file: a FIFO, a device or a dangling link is reported.
            if os.path.lexists(path) and not path.is_dir():
                reader.add(path, within=root)
    return AgentsFiles(tuple(reader.files), tuple(reader.notices))


class NestedMemory:
    """The memory files below a session's working directory, offered once each when the
    model reads a file in their folder (Claude Code's nested CLAUDE.md). One per session:
    it remembers what was offered, and `seen` starts with the files already in the
    system prompt."""

    def __init__(self, cwd: Path, env: Mapping[str, str] | None, loaded: AgentsFiles) -> None:
        self.cwd = cwd.resolve()
        self._root = project_root(self.cwd)
        self._home = home_folder(env)
        self._seen = {os.path.realpath(p) for p in loaded.paths}

    def offer(self, read: Path) -> AgentsFiles:
        """The memory files not yet offered in the folders from just below the working
        directory down to the folder of the file `read` (outermost first, each followed by
        its imports). A file out of the working directory offers none. Files that cannot be
        read safely are left out with a notice, never raised: the read itself succeeded."""
        target = Path(os.path.abspath(self.cwd / read))
        if not target.is_relative_to(self.cwd) or target.parent == self.cwd:
            return AgentsFiles(())
        reader = _MemoryReader(self._root, self._home, seen=self._seen)
        folder, folders = target.parent, []
        while folder != self.cwd:
            folders.append(folder)
            folder = folder.parent
        for folder in reversed(folders):
            for name in MEMORY_FILES:
                path = folder / name
                if not os.path.lexists(path) or path.is_dir():
                    continue
                try:
                    reader.add(path, within=self._root)
                except UnsafeFileError as exc:
                    self._seen.add(os.path.realpath(path))
                    reader.notices.append(f"{path}: {exc.reason}; not read")
        return AgentsFiles(tuple(reader.files), tuple(reader.notices))

    def note_for(self, read: Path) -> str | None:
        """What the model is told with the result of reading `read`, or None."""
        found = self.offer(read)
        if not found.files and not found.notices:
            return None
        parts = [found.prompt_section(), *(f"(not read: {n})" for n in found.notices)]
        return (
            "[rawtrio: project instructions for this folder, which apply to files in it "
            "(nested memory, read once per session):\n\n" + "\n\n".join(p for p in parts if p) + "]"
        )


def home_folder(env: Mapping[str, str] | None) -> Path:
    home = (env if env is not None else os.environ).get("HOME")
    return Path(home) if home else Path.home()


class _MemoryReader:
    """Reads memory files and their imports, each real file once."""

    def __init__(self, root: Path, home: Path, *, seen: set[str] | None = None) -> None:
        self.root = root
        self.home = home
        self.files: list[AgentsFile] = []
        self.notices: list[str] = []
        #: Real paths already read (shared with the caller when given).
        self._seen: set[str] = set() if seen is None else seen

    def add(
        self, path: Path, *, within: Path | None, depth: int = 0, by: Path | None = None
    ) -> None:
        """Read `path` (raising UnsafeFileError) and then, depth first, what it imports."""
        # The `@path` reader: loaded by the first file found (most folders have none).
        from rawtrio.config.memory_imports import MAX_IMPORT_DEPTH, import_refs, resolve_ref

        real = os.path.realpath(path)
        if real in self._seen:
            return
        raw, cut = read_head(path, limit=MAX_AGENTS_MD_BYTES, within=within, what=path.name)
        self._seen.add(real)
        text = raw.decode("utf-8", errors="replace")
        self.files.append(AgentsFile(path, text, truncated=cut, imported_by=by))
        refs = import_refs(text)
        if refs and depth >= MAX_IMPORT_DEPTH:
            self.notices.append(
                f"{path}: imports {', '.join('@' + r for r in refs)} not followed: imports "
                f"nest at most {MAX_IMPORT_DEPTH} levels deep"
            )
            return
        for ref in refs:
            target = resolve_ref(ref, path.parent, self.home)
            if not os.path.lexists(target):
                if "/" in ref or "." in ref:  # `@someone` is a mention, not a file
                    self.notices.append(f"{path}: @{ref}: no such file ({target}); not imported")
                continue
            if target.is_dir():
                self.notices.append(f"{path}: @{ref}: is a folder; not imported")
                continue
            try:
                self.add(target, within=within, depth=depth + 1, by=path)
            except UnsafeFileError as exc:
                self.notices.append(f"{path}: @{ref}: {exc.reason}; not imported")
