"""Errors of the durable session store (they extend `rawtrio.errors`).

Hierarchy::

    RawtrioError
    └── StoreError              the session database failed; the message says what to do
        ├── StoreFull           a write hit "database or disk is full"; nothing was changed
        ├── StoreUnusable       the database file cannot be used (newer, foreign, corrupt)
        │                       — "corrupt" only as SQLite itself reports it
        └── InvalidCursor       a history cursor that this store did not hand out

`UnknownSession` and `SessionLocked` (lease held by another process) come from
`rawtrio.errors` as the rest of the runtime expects.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rawtrio.errors import RawtrioError


class StoreError(RawtrioError):
    pass


class StoreFull(StoreError):
    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        super().__init__(
            f"the session database {path} is full ({what} was not saved, nothing changed); "
            f"free disk space and try again"
        )


class StoreUnusable(StoreError):
    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot use the session database {path}: {reason}")


def from_sqlite(path: Path, what: str, exc: sqlite3.DatabaseError) -> StoreError:
    """The store error for a SQLite failure of `what`, by SQLite's own error code."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_FULL") or "full" in str(exc):
        return StoreFull(path, what)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        hint = "another program holds a write lock on it for too long; try again"
    elif name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        hint = (
            "SQLite reports it damaged; copy it aside and check it with "
            "`sqlite3 FILE 'PRAGMA integrity_check'`"
        )
    elif name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM")):
        hint = "the file system refused the write; check the disk and the file's permissions"
    else:
        hint = "try again"
    return StoreError(f"the session database {path} failed ({what} was not saved): {exc}; {hint}")


class InvalidCursor(StoreError):
    def __init__(self, cursor: str) -> None:
        self.cursor = cursor
        super().__init__(f"invalid history cursor {cursor!r}: pass one a history page returned")
