"""The writer lease: one process writes a session at a time; a crash releases it.

The lease is an exclusive `flock` on a per-session lock file next to the database
(`<db>.leases/<session>.lock`). The kernel drops the lock when the holder's process
ends for any reason, `kill -9` included, so a crashed writer never leaves a session
stuck. The holder writes its pid into the file for the "open in another process (pid …)"
message. `flock` locks belong to the open file, so two stores in one process exclude
each other too.

A released lease's file is removed (a long-running process would otherwise leave one
per session it ever wrote). Removing a lock file is safe only under two rules, kept
here: the holder unlinks the path *while still holding the lock*, and only if the path
still names the file it locked; and `acquire` checks, after locking, that the path
still names the file it locked, and starts over with a fresh one if not. So a process
that opened the old file just before it was unlinked finds, once it gets the lock, that
it locked an orphan, and never believes it holds the lease beside the new holder.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
from pathlib import Path

from rawtrio.errors import SessionLocked
from rawtrio.private_files import FILE_MODE, private_dir

log = logging.getLogger(__name__)
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


class Leases:
    """The leases this store holds, by session id."""

    def __init__(self, db_path: Path) -> None:
        self.dir = db_path.with_name(db_path.name + ".leases")
        self._held: dict[str, int] = {}

    def path(self, session_id: str) -> Path:
        name = session_id if _SAFE_ID.match(session_id) else _digest(session_id)
        return self.dir / f"{name}.lock"

    def holds(self, session_id: str) -> bool:
        return session_id in self._held

    def acquire(self, session_id: str) -> None:
        """Take the lease or raise `SessionLocked` at once (never waits)."""
        if session_id in self._held:
            return
        private_dir(self.dir)
        path = self.path(session_id)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise SessionLocked(session_id, self.holder(session_id)) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._held[session_id] = fd

    def locked_elsewhere(self, session_id: str) -> bool:
        """Whether another holder has the lease right now (for expiry; takes nothing)."""
        if session_id in self._held:
            return False
        try:
            fd = os.open(self.path(session_id), os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def holder(self, session_id: str) -> int | None:
        try:
            return int(self.path(session_id).read_text() or "0") or None
        except (OSError, ValueError):
            return None

    def release(self, session_id: str) -> None:
        """Give the lease up and remove its file (see the module docstring for why that
        is safe)."""
        fd = self._held.pop(session_id, None)
        if fd is None:
            return
        path = self.path(session_id)
        try:
            held, named = os.fstat(fd), os.stat(path)
            if (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino):
                path.unlink()
        except FileNotFoundError:  # removed by hand: nothing left to remove
            log.debug("lease file %s was already gone", path)
        except OSError as exc:  # e.g. a read-only directory: the lock is released anyway
            log.warning("could not remove the lease file %s: %s", path, exc)
        finally:
            os.close(fd)

    def release_all(self) -> None:
        for session_id in list(self._held):
            self.release(session_id)


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()[:40]
