"""The private blob store: `objects/<sha256>`, content-addressed, written crash-safely.

A blob is written to a temporary file in its folder (`ab/tmp-<pid>-<random>`), made
durable, then renamed to its name: a SIGKILL (or a power cut) at any point leaves either
no object or the whole object under its name, and a stray temporary at worst. An object
that exists is therefore complete, and writing one that exists is a no-op. Files are 0600,
folders 0700.

Durability is batched (`batch()`): the blobs of one snapshot are written to temporaries
first (up to 1,024 blobs or 32 MiB at a time), then made durable together — one
`syncfs(2)` of the store's file system where the platform has it, else an `fsync` of each
temporary, several at once — then renamed, and the folders that got new names are flushed.
A change set is recorded only after its snapshot's batch ended
(rawtrio.checkpoints.store), so no record names a blob that a crash could lose. Outside a
batch, `put` makes its one blob durable at once.

Temporaries are removed by `sweep_temporaries` when the process that wrote them is gone
(the pid is in the name), or after a day; never those of a writer still running — another
session of the same project may be in the middle of a snapshot.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

from rawtrio.private_files import private_dir

TMP_PREFIX: Final = "tmp-"
#: A temporary older than this is removed even if a process with its pid runs (pid reuse).
TMP_MAX_AGE_S: Final = 24 * 3600.0
#: fsyncs run at once when `syncfs` is not available (the journal commits them together).
FSYNC_THREADS: Final = 8
#: A batch is committed early past this many blobs or bytes: a snapshot cut part way (a
#: cancel, a kill) keeps what it stored so far, and temporaries stay few.
BATCH_MAX_BLOBS: Final = 1024
BATCH_MAX_BYTES: Final = 32 * 1024 * 1024


def blob_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tmp_name(prefix: str = TMP_PREFIX) -> str:
    """A temporary's name: its writer's pid (for the sweep) and a random part (two
    threads, or two stores of one project in a process, never share one)."""
    return f"{prefix}{os.getpid()}-{secrets.token_hex(6)}"


def writer_gone(name: str, prefix: str, mtime: float) -> bool:
    """Whether the temporary `name` (`<prefix><pid>-…`) was left by a process that ended
    (or is older than `TMP_MAX_AGE_S`): only such a temporary may be removed."""
    if time.time() - mtime > TMP_MAX_AGE_S:
        return True
    pid_text = name.removeprefix(prefix).split("-", 1)[0]
    if not pid_text.isdigit():
        return True  # not one of ours: an older rawtrio's name, or garbage
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's process has that pid now
        return False
    return False


def remove_stale_temporaries(paths: Iterable[Path], prefix: str) -> int:
    n = 0
    for f in paths:
        try:
            if writer_gone(f.name, prefix, f.lstat().st_mtime):
                f.unlink()
                n += 1
        except OSError:
            continue
    return n


def _find_syncfs() -> Callable[[int], int] | None:
    """`syncfs(2)` from the C library (Linux), or None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        fn = ctypes.CDLL(name, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_SYNCFS = _find_syncfs()


def fsync_path(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a folder's entries (a rename into it) durable; a no-op where folders cannot
    be opened (Windows)."""
    with contextlib.suppress(PermissionError, IsADirectoryError):
        fsync_path(path, directory=True)


def make_durable(root: Path, files: list[Path]) -> None:
    """Flush `files` (all on `root`'s file system) to disk."""
    if not files:
        return
    if _SYNCFS is not None and len(files) > 1:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if _SYNCFS(fd) == 0:
                return
        finally:
            os.close(fd)
    if len(files) == 1:
        fsync_path(files[0])
        return
    with ThreadPoolExecutor(min(FSYNC_THREADS, len(files))) as pool:
        for _ in pool.map(fsync_path, files):
            pass


class ObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        #: Blobs written in the open batch, not yet durable nor named: id → temporary.
        self._pending: dict[str, Path] | None = None
        self._pending_bytes = 0
        #: Folders made private already by this store (`private_dir` once each, not once
        #: per blob: it was most of a cold snapshot's CPU time).
        self._ready: set[Path] = set()

    def path(self, blob: str) -> Path:
        return self.root / blob[:2] / blob[2:]

    def _where(self, blob: str) -> Path:
        """Where the blob's bytes are now (its temporary while its batch is open)."""
        if self._pending is not None and blob in self._pending:
            return self._pending[blob]
        return self.path(blob)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Blobs `put` inside are made durable and named together when it ends (or every
        `BATCH_MAX_BLOBS` / `BATCH_MAX_BYTES`); on an exception (a cancelled snapshot) those
        not committed yet are discarded. Not reentrant; one thread."""
        if self._pending is not None:
            raise RuntimeError("an object batch is open already")
        self._pending, self._pending_bytes = {}, 0
        try:
            yield
        except BaseException:
            pending, self._pending = self._pending, None
            for tmp in pending.values():
                with contextlib.suppress(OSError):
                    tmp.unlink()
            raise
        pending, self._pending = self._pending, None
        self._commit(pending)

    def _commit(self, pending: dict[str, Path]) -> None:
        if not pending:
            return
        try:
            make_durable(self.root, list(pending.values()))
            folders = set()
            for blob, tmp in pending.items():
                os.replace(tmp, self.path(blob))
                folders.add(tmp.parent)
        except BaseException:
            for tmp in pending.values():
                with contextlib.suppress(OSError):
                    tmp.unlink()
            raise
        if _SYNCFS is not None and len(folders) > 1:
            make_durable(self.root, [self.root, *folders])
        else:
            for folder in (self.root, *folders):
                fsync_dir(folder)

    def put(self, data: bytes) -> str:
        """Store `data`; return its id. Idempotent and crash-safe."""
        blob = blob_id(data)
        target = self.path(blob)
        if target.exists():
            with contextlib.suppress(OSError):
                os.utime(target)  # met again: garbage collection's grace starts anew
            return blob
        pending = self._pending
        if pending is not None and blob in pending:
            return blob
        if target.parent not in self._ready:
            private_dir(target.parent)
            self._ready.add(target.parent)
        tmp = target.parent / tmp_name()
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileNotFoundError:  # the store was removed meanwhile: make it again
            private_dir(target.parent)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if pending is None:
                    f.flush()
                    os.fsync(f.fileno())
            if pending is None:
                os.replace(tmp, target)
                fsync_dir(target.parent)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        if pending is not None:
            pending[blob] = tmp
            self._pending_bytes += len(data)
            if len(pending) >= BATCH_MAX_BLOBS or self._pending_bytes >= BATCH_MAX_BYTES:
                self._commit(pending)  # durable and named; the batch goes on
                pending.clear()
                self._pending_bytes = 0
        return blob

    def get(self, blob: str) -> bytes:
        """The blob's bytes; FileNotFoundError when it was dropped (size cap)."""
        data = self._where(blob).read_bytes()
        if blob_id(data) != blob:
            raise FileNotFoundError(f"checkpoint object {blob} is damaged")
        return data

    def has(self, blob: str) -> bool:
        return self._where(blob).is_file()

    def all(self) -> dict[str, int]:
        """Every stored blob and its size."""
        found: dict[str, int] = {}
        if not self.root.is_dir():
            return found
        for sub in self.root.iterdir():
            if not sub.is_dir():
                continue
            for f in sub.iterdir():
                if not f.name.startswith(TMP_PREFIX):
                    with contextlib.suppress(OSError):
                        found[sub.name + f.name] = f.stat().st_size
        return found

    def mtime(self, blob: str) -> float:
        try:
            return self.path(blob).stat().st_mtime
        except OSError:
            return 0.0

    def remove(self, blob: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(blob).unlink()

    def temporaries(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return list(self.root.glob(f"*/{TMP_PREFIX}*"))

    def sweep_temporaries(self) -> int:
        """Remove what killed writers left (never a complete object, never the temporary
        of a writer still running); returns how many."""
        return remove_stale_temporaries(self.temporaries(), TMP_PREFIX)
