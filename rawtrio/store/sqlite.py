"""The durable session store: SQLite in the user's state directory (docs/store.md).

Use it as `async with SqliteStore(path) as store:` or with `await store.open()` and
`await store.aclose()`. One worker thread owns the connection (`worker.DbWorker`); every
commit point is one `BEGIN IMMEDIATE … COMMIT` with `synchronous=FULL`, in WAL mode, so
readers (other processes included) never wait for writers.

A file rawtrio cannot use (newer, foreign, corrupt) is left untouched: new sessions go to
the first usable `sessions.N.db` beside it, and stderr says so once per process.

SQLite failures are turned into store errors: "database or disk is full" into
`StoreFull` (the transaction rolled back, so the session is as before), anything else
into `StoreError` naming the file and what to do. Whether a file is corrupt is SQLite's
verdict (its own errors at open, confirmed by `PRAGMA quick_check`, WAL included), never
a guess from the file's size: after a disk-full episode the main file may be shorter
than its header says while the WAL still holds the pages.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO, TypeVar

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S, TurnOutcome
from rawtrio.events import Event
from rawtrio.messages import Message
from rawtrio.store import ops, schema
from rawtrio.store.base import (
    ExportFormat,
    HistoryPage,
    ParentLink,
    SearchHit,
    SessionRecord,
    TurnRecord,
    with_parent,
)
from rawtrio.store.errors import StoreError, StoreUnusable, from_sqlite
from rawtrio.store.lease import Leases
from rawtrio.store.paths import default_db_path, fallback_paths, prepare_db_file
from rawtrio.store.recovery import RecoveryReport
from rawtrio.store.worker import DbWorker

log = logging.getLogger(__name__)
T = TypeVar("T")
BUSY_TIMEOUT_MS = 10_000
_warned: set[Path] = set()


class SqliteStore:
    def __init__(self, path: Path | None = None, *, stderr: TextIO | None = None) -> None:
        self.requested_path = path if path is not None else default_db_path()
        #: The file in use once open (differs from `requested_path` after a fallback).
        self.path = self.requested_path
        #: Why `requested_path` was not used, when it was not.
        self.unusable: StoreUnusable | None = None
        self._stderr = stderr
        self._worker = DbWorker(self._connect)
        self._leases: Leases | None = None
        self._reports: dict[str, RecoveryReport] = {}
        self._opened = False

    # --- lifecycle ------------------------------------------------------------------

    async def open(self) -> None:
        self._worker.start()
        self._opened = True
        await self._worker.call(lambda conn: None)
        self._leases = Leases(self.path)

    async def aclose(self) -> None:
        if not self._opened:
            return
        self._opened = False
        with trio.move_on_after(CLEANUP_DEADLINE_S) as scope:
            scope.shield = True
            await self._worker.stop()
        if self._leases is not None:
            self._leases.release_all()

    async def __aenter__(self) -> SqliteStore:
        await self.open()
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _connect(self) -> sqlite3.Connection:
        """Runs on the worker thread: the first usable file, migrated."""
        problems: list[StoreUnusable] = []
        for candidate in [self.requested_path, *fallback_paths(self.requested_path)]:
            try:
                conn = _open_file(candidate)
            except StoreUnusable as exc:
                problems.append(exc)
                continue
            self.path = candidate
            if problems:
                self.unusable = problems[0]
                self._warn(problems[0], candidate)
            return conn
        raise problems[-1]

    def _warn(self, problem: StoreUnusable, used: Path) -> None:
        if problem.path in _warned:
            return
        _warned.add(problem.path)
        print(
            f"rawtrio: {problem}; it was left untouched and new sessions are stored in {used}",
            file=self._stderr or sys.stderr,
        )

    # --- helpers ----------------------------------------------------------------------

    async def _run(self, what: str, fn: Callable[[ops.Conn], T], *, read: bool = False) -> T:
        try:
            return await self._worker.call(fn, interruptible=read)
        except sqlite3.DatabaseError as exc:
            raise from_sqlite(self.path, what, exc) from exc

    @property
    def leases(self) -> Leases:
        if self._leases is None:
            raise StoreError("the session store is not open: use `async with SqliteStore()`")
        return self._leases

    async def _writer(self, session_id: str) -> None:
        """Hold the writer lease of a session, repairing it when first taken."""
        if self.leases.holds(session_id):
            return
        await self._run("a session lookup", lambda c: ops.require(c, session_id), read=True)
        self.leases.acquire(session_id)
        try:
            self._reports[session_id] = await self._run(
                "crash recovery", lambda c: ops.recover(c, session_id)
            )
        except BaseException:
            self.leases.release(session_id)
            raise

    # --- the SessionStore interface ---------------------------------------------------

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
        now = time.time()
        record = SessionRecord(session_id, title, cwd, system_prompt, provider, model, now, now)
        if parent is not None:
            record = with_parent(record, parent)
        self.leases.acquire(session_id)
        try:
            await self._run("a new session", lambda c: ops.create_session(c, record))
        except BaseException:
            self.leases.release(session_id)
            raise
        return record

    async def get_session(self, session_id: str) -> SessionRecord:
        return await self._run("a session", lambda c: ops.get_session(c, session_id), read=True)

    async def list_sessions(self, *, cwd: str | None = None) -> list[SessionRecord]:
        return await self._run("the session list", lambda c: ops.list_sessions(c, cwd), read=True)

    async def list_children(self, parent_id: str) -> list[SessionRecord]:
        return await self._run(
            "the session's children", lambda c: ops.list_children(c, parent_id), read=True
        )

    async def rename_session(self, session_id: str, title: str) -> None:
        await self._writer(session_id)
        await self._run("a rename", lambda c: ops.rename(c, session_id, title))

    async def delete_session(self, session_id: str) -> None:
        await self._writer(session_id)
        await self._run("a deletion", lambda c: ops.delete(c, session_id))
        self.leases.release(session_id)
        self._reports.pop(session_id, None)

    async def load_context(self, session_id: str) -> list[Message]:
        return await self._run("the context", lambda c: ops.load_context(c, session_id), read=True)

    async def begin_turn(
        self, session_id: str, turn_id: str, client_request_id: str | None
    ) -> None:
        await self._writer(session_id)
        await self._run(
            "a new turn", lambda c: ops.begin_turn(c, session_id, turn_id, client_request_id)
        )

    async def find_turn(self, session_id: str, client_request_id: str) -> TurnRecord | None:
        return await self._run(
            "a turn", lambda c: ops.find_turn(c, session_id, client_request_id), read=True
        )

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        await self._writer(session_id)
        batch = list(messages)
        await self._run("a commit", lambda c: ops.commit(c, session_id, turn_id, batch))

    async def replace_context(
        self, session_id: str, turn_id: str | None, messages: Sequence[Message]
    ) -> None:
        await self._writer(session_id)
        batch = list(messages)
        await self._run(
            "a compaction", lambda c: ops.replace_context(c, session_id, turn_id, batch)
        )

    async def mark_call_started(self, session_id: str, turn_id: str, call_id: str) -> None:
        await self._writer(session_id)
        await self._run(
            "a call start", lambda c: ops.mark_call_started(c, session_id, turn_id, call_id)
        )

    async def get_state(self, session_id: str, key: str) -> Any:
        return await self._run(
            "a state value", lambda c: ops.get_state(c, session_id, key), read=True
        )

    async def set_state(self, session_id: str, key: str, value: Any) -> None:
        await self._writer(session_id)
        await self._run("a state value", lambda c: ops.set_state(c, session_id, key, value))

    async def end_turn(
        self, session_id: str, turn_id: str, outcome: TurnOutcome, reason: str
    ) -> None:
        await self._writer(session_id)
        await self._run(
            "a turn outcome", lambda c: ops.end_turn(c, session_id, turn_id, outcome.value, reason)
        )

    def record_event(self, event: Event) -> None:
        """Queue an event for the display history; only the lease holder records."""
        if self._leases is None or not self._leases.holds(event.session_id):
            log.warning(
                "event %s of session %s dropped: no writer lease", event.seq, event.session_id
            )
            return
        self._worker.post(event, ops.write_event_batch)

    async def events_since(self, session_id: str, seq: int) -> list[Event]:
        return await self._run(
            "the history", lambda c: ops.events_since(c, session_id, seq), read=True
        )

    async def history(
        self,
        session_id: str,
        *,
        cursor: str | None = None,
        limit: int = 50,
        newest_first: bool = True,
    ) -> HistoryPage:
        return await self._run(
            "a history page",
            lambda c: ops.history(c, session_id, cursor, limit, newest_first),
            read=True,
        )

    async def last_seq(self, session_id: str) -> int:
        def read(c: ops.Conn) -> int:
            ops.require(c, session_id)
            return ops.last_seq(c, session_id)

        return await self._run("the history", read, read=True)

    async def open_for_write(self, session_id: str) -> RecoveryReport:
        await self._writer(session_id)
        return self._reports.pop(session_id, RecoveryReport())

    async def close_session(self, session_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self.leases.release(session_id)
        self._reports.pop(session_id, None)

    async def fork_session(
        self,
        source_id: str,
        *,
        session_id: str,
        up_to: int | None = None,
        title: str | None = None,
    ) -> SessionRecord:
        from rawtrio.store.fork import fork  # forks, exports and searches are rare: not at start-up

        self.leases.acquire(session_id)
        try:
            return await self._run("a fork", lambda c: fork(c, source_id, session_id, up_to, title))
        except BaseException:
            self.leases.release(session_id)
            raise

    async def prompt_position(self, session_id: str, turn_id: str) -> int | None:
        return await self._run(
            "a prompt's position",
            lambda c: ops.prompt_position(c, session_id, turn_id),
            read=True,
        )

    async def export_session(self, session_id: str, fmt: ExportFormat) -> str:
        from rawtrio.store import export

        def read(c: ops.Conn) -> str:
            record = ops.get_session(c, session_id)
            return export.export(
                fmt, record, ops.load_context(c, session_id), ops.events_since(c, session_id, 0)
            )

        return await self._run("an export", read, read=True)

    async def search(
        self, query: str, *, cwd: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        from rawtrio.store.search import search

        return await self._run("a search", lambda c: search(c, query, cwd, limit), read=True)

    async def expire_sessions(self, retention_days: float) -> list[str]:
        if retention_days <= 0:
            await trio.lowlevel.checkpoint()
            return []
        before = time.time() - retention_days * 86400
        removed: list[str] = []
        for session_id in await self._run("expiry", lambda c: ops.expired(c, before), read=True):
            if self.leases.holds(session_id):
                continue
            try:
                self.leases.acquire(session_id)
            except Exception:  # SessionLocked: in use elsewhere, so not expired for real
                continue
            try:
                if await self._run("expiry", _deleter(session_id, before)):
                    removed.append(session_id)
            finally:
                self.leases.release(session_id)
        return removed


def _deleter(session_id: str, before: float) -> Callable[[ops.Conn], bool]:
    return lambda c: ops.delete_if_idle(c, session_id, before)


def _open_file(path: Path) -> sqlite3.Connection:
    """Connect, check it is ours (before changing anything), set WAL, migrate."""
    prepare_db_file(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
    except sqlite3.DatabaseError as exc:
        raise from_sqlite(path, "opening the database", exc) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        schema.check_version(conn, path)
        conn.execute("PRAGMA journal_mode = WAL")
        schema.migrate(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn
