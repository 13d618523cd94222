"""Walk a directory tree fast, honouring .gitignore, and stop promptly when cancelled.

Used by `list_dir`, `glob` and `grep`. The walk runs in a worker thread (call it through
`trio.to_thread.run_sync`); every `CANCEL_CHECK_EVERY` entries it asks trio whether the
call was cancelled (`trio.from_thread.check_cancelled`), so a cancelled turn does not leave
a thread scanning a 50,000-file tree (I4).

Ignore rules, as git applies them: `.gitignore` in every directory (patterns relative to
it; a deeper file wins; `!` re-includes), `.git/info/exclude` at the root, and `.git`
itself is never entered. An ignored directory is not entered at all. Symlinks are listed
but never followed into directories (no loops, no walking out of the tree).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

if TYPE_CHECKING:
    import pathspec

CANCEL_CHECK_EVERY: Final = 512
_ALWAYS_SKIPPED: Final = frozenset({".git"})


@dataclass(frozen=True, slots=True)
class Entry:
    #: Path relative to the walk's root, with "/" separators.
    rel: str
    path: str
    is_dir: bool
    is_symlink: bool
    depth: int


@dataclass(frozen=True, slots=True)
class _Rules:
    #: The directory the .gitignore lives in, relative to the root ("" for the root).
    base: str
    spec: pathspec.GitIgnoreSpec


class Walker:
    """One walk. `skipped_ignored` counts entries left out by ignore rules."""

    def __init__(
        self,
        root: Path,
        *,
        gitignore: bool = True,
        max_depth: int | None = None,
        skip: tuple[Path, ...] = (),
    ) -> None:
        """`skip`: folders never entered nor listed wherever they turn up in the tree
        (matched by device and inode; those that do not exist are ignored)."""
        self.root = root
        self.gitignore = gitignore
        self.max_depth = max_depth
        self._skip: set[tuple[int, int]] = set()
        for folder in skip:
            try:
                st = os.stat(folder)
            except OSError:
                continue
            self._skip.add((st.st_ino, st.st_dev))
        self._skip_inodes = {ino for ino, _dev in self._skip}
        self.skipped_ignored = 0
        self.unreadable_dirs = 0
        self._seen = 0

    def __iter__(self) -> Iterator[Entry]:
        rules: list[_Rules] = []
        if self.gitignore:
            rules.extend(self._root_rules())
        yield from self._walk(str(self.root), "", 1, tuple(rules))

    def _walk(self, path: str, rel: str, depth: int, rules: tuple[_Rules, ...]) -> Iterator[Entry]:
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            self.unreadable_dirs += 1
            return
        if self.gitignore and any(e.name == ".gitignore" for e in entries):
            own = _load_rules(os.path.join(path, ".gitignore"), rel)
            if own is not None:
                rules = (*rules, own)
        for entry in entries:
            self._seen += 1
            if self._seen % CANCEL_CHECK_EVERY == 0:
                trio.from_thread.check_cancelled()
            if entry.name in _ALWAYS_SKIPPED:
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_symlink = entry.is_symlink()
            except OSError:
                continue
            if is_dir and entry.inode() in self._skip_inodes and self._skipped(entry):
                continue
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            if rules and _ignored(rules, child_rel, is_dir):
                self.skipped_ignored += 1
                continue
            yield Entry(child_rel, entry.path, is_dir, is_symlink, depth)
            if is_dir and (self.max_depth is None or depth < self.max_depth):
                yield from self._walk(entry.path, child_rel, depth + 1, rules)

    def _skipped(self, entry: os.DirEntry[str]) -> bool:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return False
        return (st.st_ino, st.st_dev) in self._skip

    def _root_rules(self) -> list[_Rules]:
        found = []
        exclude = _load_rules(str(self.root / ".git" / "info" / "exclude"), "")
        if exclude is not None:
            found.append(exclude)
        return found


def _load_rules(file: str, base: str) -> _Rules | None:
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    lines = [line for line in lines if line.strip() and not line.startswith("#")]
    if not lines:
        return None
    import pathspec  # on the first .gitignore read: not at start-up (docs/benchmarks.md)

    return _Rules(base, pathspec.GitIgnoreSpec.from_lines(lines))


def _ignored(rules: tuple[_Rules, ...], rel: str, is_dir: bool) -> bool:
    verdict: bool | None = None
    for r in rules:  # outermost first: a deeper .gitignore has the last word
        sub = rel[len(r.base) + 1 :] if r.base else rel
        result = r.spec.check_file(sub + "/" if is_dir else sub)
        if result.include is not None:
            verdict = result.include
    return bool(verdict)


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for a glob over "/"-separated relative paths.

    `*` and `?` stay within one path component, `**` spans any number of them, `[abc]`
    and `{a,b}` work as in shells. A pattern without "/" matches the last component at
    any depth (`*.py`), as in ripgrep's `-g`.
    """
    anywhere = "/" not in pattern.strip("/")
    pattern = pattern.lstrip("/")
    out: list[str] = []
    i, n, brace = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        elif c == "{":
            brace += 1
            out.append("(?:")
        elif c == "}" and brace:
            brace -= 1
            out.append(")")
        elif c == "," and brace:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    body = "".join(out) + ")" * brace
    return re.compile(("(?:.*/)?" if anywhere else "") + body + r"\Z")


def glob_matches(patterns: tuple[str, ...], rel: str) -> bool:
    """Whether `rel` matches any of `patterns`; `!pattern` excludes (last word wins)."""
    verdict = not any(not p.startswith("!") for p in patterns)
    for p in patterns:
        negated = p.startswith("!")
        if glob_regex(p[1:] if negated else p).match(rel):
            verdict = not negated
    return verdict
