"""A session store that fails on purpose: the real store, with a fault at the Nth write.

`FaultyStore` wraps any `SessionStore` (normally a real `SqliteStore`) and raises the
store's own error classes — `StoreFull`, or a `StoreError` worded as SQLite's I/O and
lock failures are — at chosen *commit points*, the store writes a session makes
(`WRITES`). The failing call raises before it reaches the wrapped store, exactly like a
real failed transaction, which rolls back: nothing of it is stored.

Typical use — find the commit points of a scenario with a dry run, then fail each::

    dry = FaultyStore(store)            # counts, never fails
    ... run the scenario ...
    for n in range(1, dry.writes + 1):
        faulty = FaultyStore(SqliteStore(path), fail_at=n)   # the n-th write fails
        ... run it again; faulty.failed names the point that failed ...

`arm(at=…)` re-arms a live wrapper (counting from the writes so far), `heal()` stops
failing. Reads, `record_event` and lifecycle calls pass straight through.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from rawtrio.contracts import TurnOutcome
from rawtrio.events import Event
from rawtrio.messages import Message
from rawtrio.store.base import (
    ExportFormat,
    HistoryPage,
    ParentLink,
    SearchHit,
    SessionRecord,
    SessionStore,
    TurnRecord,
)
from rawtrio.store.errors import StoreError, StoreFull, from_sqlite
from rawtrio.store.recovery import RecoveryReport

FaultKind = Literal["full", "io", "locked"]

#: The store calls that write: a session's commit points, in the words of the store.
WRITES: tuple[str, ...] = (
    "create_session",
    "rename_session",
    "delete_session",
    "begin_turn",
    "commit",
    "replace_context",
    "mark_call_started",
    "set_state",
    "end_turn",
    "fork_session",
)

_SQLITE_MESSAGES = {
    "io": ("disk I/O error", "SQLITE_IOERR"),
    "locked": ("database is locked", "SQLITE_BUSY"),
}


def fault(kind: FaultKind, path: Path, what: str) -> StoreError:
    """The error the real store raises for a `kind` failure of `what`."""
    if kind == "full":
        return StoreFull(path, what)
    message, name = _SQLITE_MESSAGES[kind]
    exc = sqlite3.OperationalError(message)
    exc.sqlite_errorname = name
    return from_sqlite(path, what, exc)


class FaultyStore:
    def __init__(
        self,
        inner: SessionStore,
        *,
        fail_at: int | None = None,
        times: int = 1,
        kind: FaultKind = "full",
        path: Path | None = None,
    ) -> None:
        self.inner = inner
        self.path = path or Path(str(getattr(inner, "path", "sessions.db")))
        #: How many writes were attempted so far, and their names in order.
        self.writes = 0
        self.points: list[str] = []
        #: The writes that failed on purpose, as "N:name".
        self.failed: list[str] = []
        self._fail_from: int | None = None
        self._fail_until = 0
        self._kind: FaultKind = kind
        if fail_at is not None:
            self.arm(at=fail_at, times=times, kind=kind, relative=False)

    def arm(
        self, *, at: int = 1, times: int = 1, kind: FaultKind | None = None, relative: bool = True
    ) -> None:
        """Fail `times` writes starting with the `at`-th (counted from now when `relative`)."""
        if at < 1 or times < 1:
            raise ValueError(f"at and times must be at least 1 (got at={at}, times={times})")
        first = self.writes + at if relative else at
        self._fail_from, self._fail_until = first, first + times
        if kind is not None:
            self._kind = kind

    def heal(self) -> None:
        """Stop failing: every later write reaches the wrapped store."""
        self._fail_from = None

    def _write(self, name: str) -> None:
        self.writes += 1
        self.points.append(name)
        n = self.writes
        if self._fail_from is not None and self._fail_from <= n < self._fail_until:
            self.failed.append(f"{n}:{name}")
            raise fault(self._kind, self.path, f"{name} (injected fault at write {n})")

    # --- writes (commit points) -----------------------------------------------------------

    async def create_session(
        self,
        *,
        session_id: str,
        cwd: str,
        system_prompt: str,
        provider: str,
        model: str,
        title: str,
        parent: ParentLink | None = None,
    ) -> SessionRecord:
        self._write("create_session")
        return await self.inner.create_session(
            session_id=session_id,
            cwd=cwd,
            system_prompt=system_prompt,
            provider=provider,
            model=model,
            title=title,
            parent=parent,
        )

    async def rename_session(self, session_id: str, title: str) -> None:
        self._write("rename_session")
        await self.inner.rename_session(session_id, title)

    async def delete_session(self, session_id: str) -> None:
        self._write("delete_session")
        await self.inner.delete_session(session_id)

    async def begin_turn(
        self, session_id: str, turn_id: str, client_request_id: str | None
    ) -> None:
        self._write("begin_turn")
        await self.inner.begin_turn(session_id, turn_id, client_request_id)

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        self._write("commit")
        await self.inner.commit(session_id, turn_id, messages)

    async def replace_context(
        self, session_id: str, turn_id: str | None, messages: Sequence[Message]
    ) -> None:
        self._write("replace_context")
        await self.inner.replace_context(session_id, turn_id, messages)

    async def mark_call_started(self, session_id: str, turn_id: str, call_id: str) -> None:
        self._write("mark_call_started")
        await self.inner.mark_call_started(session_id, turn_id, call_id)

    async def set_state(self, session_id: str, key: str, value: Any) -> None:
        self._write("set_state")
        await self.inner.set_state(session_id, key, value)

    async def end_turn(
        self, session_id: str, turn_id: str, outcome: TurnOutcome, reason: str
    ) -> None:
        self._write("end_turn")
        await self.inner.end_turn(session_id, turn_id, outcome, reason)

    async def fork_session(
        self,
        source_id: str,
        *,
        session_id: str,
        up_to: int | None = None,
        title: str | None = None,
    ) -> SessionRecord:
        self._write("fork_session")
        return await self.inner.fork_session(
            source_id, session_id=session_id, up_to=up_to, title=title
        )

    # --- everything else passes through ---------------------------------------------------

    async def get_session(self, session_id: str) -> SessionRecord:
        return await self.inner.get_session(session_id)

    async def list_sessions(self, *, cwd: str | None = None) -> list[SessionRecord]:
        return await self.inner.list_sessions(cwd=cwd)

    async def list_children(self, parent_id: str) -> list[SessionRecord]:
        return await self.inner.list_children(parent_id)

    async def load_context(self, session_id: str) -> list[Message]:
        return await self.inner.load_context(session_id)

    async def find_turn(self, session_id: str, client_request_id: str) -> TurnRecord | None:
        return await self.inner.find_turn(session_id, client_request_id)

    async def get_state(self, session_id: str, key: str) -> Any:
        return await self.inner.get_state(session_id, key)

    def record_event(self, event: Event) -> None:
        self.inner.record_event(event)

    async def events_since(self, session_id: str, seq: int) -> list[Event]:
        return await self.inner.events_since(session_id, seq)

    async def history(
        self,
        session_id: str,
        *,
        cursor: str | None = None,
        limit: int = 50,
        newest_first: bool = True,
    ) -> HistoryPage:
        return await self.inner.history(
            session_id, cursor=cursor, limit=limit, newest_first=newest_first
        )

    async def prompt_position(self, session_id: str, turn_id: str) -> int | None:
        return await self.inner.prompt_position(session_id, turn_id)

    async def last_seq(self, session_id: str) -> int:
        return await self.inner.last_seq(session_id)

    async def open_for_write(self, session_id: str) -> RecoveryReport:
        return await self.inner.open_for_write(session_id)

    async def close_session(self, session_id: str) -> None:
        await self.inner.close_session(session_id)

    async def export_session(self, session_id: str, fmt: ExportFormat) -> str:
        return await self.inner.export_session(session_id, fmt)

    async def search(
        self, query: str, *, cwd: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        return await self.inner.search(query, cwd=cwd, limit=limit)

    async def expire_sessions(self, retention_days: float) -> list[str]:
        return await self.inner.expire_sessions(retention_days)

    async def aclose(self) -> None:
        await self.inner.aclose()
