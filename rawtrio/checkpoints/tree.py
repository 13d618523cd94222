"""A bounded snapshot of the project tree, for tools whose changes are found by comparison.

`bash` and MCP tools can change any file; their changes are found by comparing the tree
before and after the call. The walk is `rawtrio.tools.walk.Walker` (it honours .gitignore,
never enters `.git`, never follows symlinked folders, and stops when the calling trio task
is cancelled). Each file's content is kept in the object store *before* the call, since
afterwards it is gone; a per-session cache keyed by (size, mtime, inode, mode) means only
files that changed since the last snapshot are read again.

Bounds (docs/checkpoints.md): at most `Limits.max_files` files are looked at, files larger
than `Limits.max_file_bytes` are recorded by size and time only, and at most
`Limits.max_turn_bytes` of new content is stored per turn. A file past a bound that then
changes is reported as not captured, with the reason.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import trio

from rawtrio.checkpoints.model import Version
from rawtrio.checkpoints.objects import ObjectStore
from rawtrio.tools.walk import Walker

MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    max_file_bytes: int = 2 * MIB
    max_turn_bytes: int = 64 * MIB
    max_files: int = 20_000
    project_cap_bytes: int = 1024 * MIB


@dataclass(frozen=True, slots=True)
class Seen:
    """One file as a snapshot saw it: its version, or why its content was not kept."""

    key: tuple[int, int, int, int]
    version: Version | None
    reason: str | None = None


@dataclass
class Snapshot:
    files: dict[str, Seen] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    #: Set when the walk stopped at `max_files`: changes beyond it were not seen.
    truncated: bool = False


class Budget:
    """The bytes of new content a turn may still store."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def take(self, n: int) -> bool:
        if n > self.left:
            return False
        self.left -= n
        return True


#: How many files a snapshot reads between two looks at its caller's cancellation.
CANCEL_CHECK_EVERY: Final = 16


def check_cancelled() -> None:
    """Raise `trio.Cancelled` in a worker thread whose trio caller was cancelled; nothing
    in a thread trio did not start (the crash stress calls `snapshot` directly)."""
    try:
        trio.from_thread.check_cancelled()
    except RuntimeError:  # not a trio worker thread
        return


def stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)


def read_version(
    path: Path, objects: ObjectStore, limits: Limits, budget: Budget
) -> tuple[tuple[int, int, int, int], Version | None, str | None] | None:
    """Keep one file's content; None when it does not exist (or is not a file/symlink)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    key = stat_key(st)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        data = os.fsencode(os.readlink(path))
        return key, Version(objects.put(data), mode, len(data), symlink=True), None
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_size > limits.max_file_bytes:
        return key, None, f"larger than the per-file limit ({limits.max_file_bytes} bytes)"
    if not budget.take(st.st_size):
        return key, None, f"the turn's snapshot budget ({limits.max_turn_bytes} bytes) was spent"
    data = path.read_bytes()
    return key, Version(objects.put(data), mode, len(data)), None


def snapshot(
    root: Path,
    objects: ObjectStore,
    limits: Limits,
    budget: Budget,
    cache: dict[str, Seen],
    skip: tuple[Path, ...] = (),
) -> Snapshot:
    """Walk `root` (in a worker thread: it checks for cancellation as it goes, so a cancel
    of the turn ends a long walk within a few files rather than after the whole tree),
    never entering the folders of `skip` (rawtrio's own, `CheckpointStore.own_folders`)."""
    snap = Snapshot()
    count = 0
    for entry in Walker(root, skip=skip):
        if count % CANCEL_CHECK_EVERY == 0:
            check_cancelled()
        if entry.is_dir:
            snap.dirs.add(entry.rel)
            continue
        count += 1
        if count > limits.max_files:
            snap.truncated = True
            break
        try:
            st = os.lstat(entry.path)
        except OSError:
            continue
        known = cache.get(entry.rel)
        if (
            known is not None
            and known.key == stat_key(st)
            and known.version is not None
            and objects.has(known.version.blob)
        ):
            snap.files[entry.rel] = known
            continue
        try:
            got = read_version(Path(entry.path), objects, limits, budget)
        except OSError as exc:
            snap.files[entry.rel] = Seen(stat_key(st), None, f"unreadable: {exc.strerror}")
            continue
        if got is None:
            continue
        seen = Seen(*got)
        snap.files[entry.rel] = seen
        cache[entry.rel] = seen
    return snap
