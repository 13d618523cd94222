"""Where a project's checkpoints live, the size cap, and retention.

Layout under the state dir (never the user's `.git`):

    <state>/checkpoints/<project-key>/project.json          the project's path, for people
    <state>/checkpoints/<project-key>/objects/ab/cdef…      blobs (rawtrio.checkpoints.objects)
    <state>/checkpoints/<project-key>/changesets/<session>/<NNNNNN>-<turn>.json

`<project-key>` is the first 16 hex digits of the SHA-256 of the project directory's real
path. A change-set record is written (temporary file, fsync, rename, fsync of its folder)
only after every blob it names is durable under its name, so a crash leaves either no
record or a complete one whose objects exist. Undo and redo rewrite the record the same
way: first to mark it `pending` (an undo or redo under way), then with its new `state`.

Opening a store for work (`recover`, run once per `CheckpointStore` by `ensure` and by
`find`) removes the temporaries that killed writers left, in `objects/` and beside the
records; those of a writer still running are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rawtrio.checkpoints.model import ChangeSet
from rawtrio.checkpoints.objects import (
    ObjectStore,
    fsync_dir,
    remove_stale_temporaries,
    tmp_name,
)
from rawtrio.checkpoints.paths import ROOT_NAME
from rawtrio.checkpoints.paths import checkpoints_root as checkpoints_root  # re-exported
from rawtrio.checkpoints.tree import Limits
from rawtrio.private_files import private_dir

#: How a change-set record's temporary is named (beside the record, `<pid>-<random>`).
RECORD_TMP_PREFIX = ".tmp-"
#: Unnamed blobs younger than this are kept: a running turn may name them yet.
GC_GRACE_S = 3600.0


def project_key(cwd: Path) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(cwd))).hexdigest()[:16]


def write_json_atomically(path: Path, value: object) -> None:
    new_folder = not path.parent.is_dir()
    private_dir(path.parent)
    if new_folder:  # its name in its parent must be durable as well
        fsync_dir(path.parent.parent)
    tmp = path.with_name(tmp_name(RECORD_TMP_PREFIX))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


@dataclass(frozen=True, slots=True)
class Dropped:
    """What the size cap removed, for the notice."""

    change_sets: int
    bytes_freed: int

    def notice(self, cap: int) -> str:
        return (
            f"checkpoints: the project's store passed its cap of {_size(cap)}; "
            f"the {self.change_sets} oldest change set(s) were dropped and can no longer be "
            "undone"
        )


class CheckpointStore:
    """One project's checkpoints. Blocking file I/O: call from a worker thread."""

    def __init__(
        self, root: Path, cwd: Path, limits: Limits | None = None, *, folder: Path | None = None
    ) -> None:
        self.cwd = cwd
        self.limits = limits or Limits()
        self.root = root
        self.dir = folder or root / project_key(cwd)
        self.objects = ObjectStore(self.dir / "objects")
        self.changesets = self.dir / "changesets"
        self._recovered = False

    def own_folders(self) -> tuple[Path, ...]:
        """Folders a snapshot never enters when they lie inside the project (rawtrio run
        in the home folder, or a state directory inside the project): the checkpoints
        themselves and the state directory holding them (the session store, the logs).
        Captured, an undo would put an older session store back."""
        if self.root.name == ROOT_NAME:
            return (self.root, self.root.parent)
        return (self.root,)

    def _record_path(self, cs: ChangeSet) -> Path:
        return self.changesets / cs.session_id / f"{cs.number:06d}-{cs.turn_id}.json"

    def recover(self) -> int:
        """Remove what killed writers left (object and record temporaries), once per
        instance; returns how many. Nothing when the store does not exist yet."""
        if self._recovered or not self.dir.is_dir():
            return 0
        self._recovered = True
        n = self.objects.sweep_temporaries()
        if self.changesets.is_dir():
            n += remove_stale_temporaries(
                self.changesets.glob(f"*/{RECORD_TMP_PREFIX}*"), RECORD_TMP_PREFIX
            )
        return n

    def temporaries(self) -> list[Path]:
        """Every temporary in the store now (the crash stress checks none is left)."""
        found = self.objects.temporaries()
        if self.changesets.is_dir():
            found += self.changesets.glob(f"*/{RECORD_TMP_PREFIX}*")
        return found

    def ensure(self) -> None:
        private_dir(self.dir)
        self.recover()
        info = self.dir / "project.json"
        if not info.exists():
            write_json_atomically(info, {"path": os.path.realpath(self.cwd)})

    def next_number(self, session_id: str) -> int:
        return max((c.number for c in self.change_sets(session_id)), default=0) + 1

    def record(self, cs: ChangeSet) -> None:
        """Write (or rewrite) a change set's record; its blobs must exist already."""
        self.ensure()
        write_json_atomically(self._record_path(cs), cs.to_json())

    def change_sets(self, session_id: str | None = None) -> list[ChangeSet]:
        """Change sets, oldest first (one session's, or the whole project's)."""
        if session_id is not None:
            folders: Iterable[Path] = [self.changesets / session_id]
        elif self.changesets.is_dir():
            folders = self.changesets.iterdir()
        else:
            folders = []
        found: list[ChangeSet] = []
        for folder in folders:
            if not folder.is_dir():
                continue
            for f in folder.glob("[0-9]*.json"):
                try:
                    found.append(ChangeSet.from_json(json.loads(f.read_text("utf-8"))))
                except (OSError, ValueError, KeyError, TypeError):
                    continue  # a damaged record is never acted upon
        found.sort(key=lambda c: (c.created_at, c.number))
        return found

    def remove(self, cs: ChangeSet) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._record_path(cs).unlink()

    def drop_sessions(self, session_ids: Iterable[str]) -> int:
        """Retention: a session that expired takes its change sets with it."""
        n = 0
        for sid in session_ids:
            for cs in self.change_sets(sid):
                self.remove(cs)
                n += 1
            with contextlib.suppress(OSError):
                (self.changesets / sid).rmdir()
        if n:
            self.collect_garbage()
        return n

    def collect_garbage(self, grace_s: float = GC_GRACE_S) -> int:
        """Remove blobs no change set names and not written or met for `grace_s` (a
        running turn's snapshots are not named by any record yet); returns bytes freed."""
        wanted: set[str] = set()
        for cs in self.change_sets():
            for f in cs.files:
                for v in (f.before, f.after):
                    if v is not None:
                        wanted.add(v.blob)
        freed = 0
        old = time.time() - grace_s
        for blob, size in self.objects.all().items():
            if blob not in wanted and self.objects.mtime(blob) < old:
                self.objects.remove(blob)
                freed += size
        self.objects.sweep_temporaries()
        return freed

    def enforce_cap(self) -> Dropped | None:
        """Keep the project's store under its cap, dropping the oldest change sets first."""
        self.collect_garbage()
        total = sum(self.objects.all().values())
        cap = self.limits.project_cap_bytes
        if total <= cap:
            return None
        dropped, before = 0, total
        for cs in self.change_sets():
            if total <= cap:
                break
            self.remove(cs)
            dropped += 1
            self.collect_garbage(grace_s=0)
            total = sum(self.objects.all().values())
        return Dropped(dropped, before - total)

    def find(self, session_id: str | None, number: int | None) -> list[ChangeSet]:
        self.recover()
        sets = self.change_sets(session_id)
        if number is not None:
            sets = [c for c in sets if c.number == number]
        return sets


def drop_sessions_everywhere(root: Path, session_ids: Iterable[str]) -> int:
    """Retention: remove the change sets of sessions that were deleted or expired, in
    every project under `root`; returns how many. Blocking: call from a worker thread."""
    ids = set(session_ids)
    if not ids or not root.is_dir():
        return 0
    n = 0
    for folder in root.iterdir():
        changesets = folder / "changesets"
        if not changesets.is_dir():
            continue
        present = [sid for sid in ids if (changesets / sid).is_dir()]
        if present:
            store = CheckpointStore(root, folder, folder=folder)
            n += store.drop_sessions(present)
    return n


def _size(n: int) -> str:
    mib = 1024 * 1024
    return f"{n // mib} MiB" if n % mib == 0 else f"{n} bytes"


def now() -> float:
    return time.time()
