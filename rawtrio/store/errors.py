"""Errors of the durable session store (they extend `rawtrio.errors`).

Hierarchy::

    RawtrioError
    └── StoreError              the session database failed; the message says what to do
        ├── StoreFull           a write hit "database or disk is full"; nothing was changed
        ├── StoreUnusable       the database file cannot be used (newer, foreign, corrupt)
        └── InvalidCursor       a history cursor that this store did not hand out

`UnknownSession` and `SessionLocked` (lease held by another process) come from
`rawtrio.errors` as the rest of the runtime expects.
"""

from __future__ import annotations

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


class InvalidCursor(StoreError):
    def __init__(self, cursor: str) -> None:
        self.cursor = cursor
        super().__init__(f"invalid history cursor {cursor!r}: pass one a history page returned")
