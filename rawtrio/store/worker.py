"""The thread that owns the SQLite connection, and how trio tasks talk to it.

A default `sqlite3` connection cannot be shared by `trio.to_thread.run_sync` calls (they
land on different threads), and two tasks sharing one connection would merge their
transactions. So one `threading.Thread` owns the connection and runs jobs from a FIFO
queue, one at a time, each in its own transaction; a finished job reschedules the waiting
trio task through the trio token (no polling, no thread per call).

Cancellation, per job kind:

- a job not yet started is dropped, so the caller sees `trio.Cancelled` and nothing ran;
- a running *read* is stopped with `conn.interrupt()` (SQLite aborts the statement at
  once and the connection stays usable), then the caller sees `trio.Cancelled`;
- a running *write* finishes (commits are never torn) and its result is returned; the
  caller's next checkpoint raises `trio.Cancelled`. Commit points are additionally
  shielded by the runtime, so they run even when the turn was cancelled first.

`post` (used by `record_event`) never blocks: items are appended to an open batch that
the worker writes in one transaction. Every job is queued in call order, so an event
recorded before a commit is stored before it.

A batch that fails for a reason that may pass (disk full, I/O error, database locked:
`sqlite3.OperationalError`) is kept and written again, in order, before the next batch
and before every later write job, so display events are not lost to a fault that
clears. At most `MAX_UNSAVED` items are kept; older ones are dropped with an error in
the log. Any other failure (a bug) drops the batch and logs it.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import outcome
import trio

log = logging.getLogger(__name__)
T = TypeVar("T")
#: Display events kept for another try while the database refuses writes.
MAX_UNSAVED = 10_000
Conn = sqlite3.Connection


@dataclass(eq=False)
class _Job(Generic[T]):
    fn: Callable[[Conn], T]
    interruptible: bool
    task: trio.lowlevel.Task
    token: trio.lowlevel.TrioToken
    state: str = "queued"  # queued → running → done | dropped


@dataclass(eq=False)
class _Batch:
    write: Callable[[Conn, list[Any]], None]
    items: list[Any] = field(default_factory=list)


class DbWorker:
    """Runs functions of the connection on one dedicated thread."""

    def __init__(self, connect: Callable[[], Conn], name: str = "rawtrio-store") -> None:
        self._connect = connect
        self._queue: queue.SimpleQueue[_Job[Any] | _Batch | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._open_batch: _Batch | None = None
        self._conn: Conn | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._stopped = threading.Event()
        self.batch_errors = 0
        #: Batches that failed for a reason that may pass, oldest first (worker thread only).
        self._unsaved: list[_Batch] = []
        #: How many items those batches hold (read from any thread).
        self.unsaved = 0

    def start(self) -> None:
        self._thread.start()

    async def call(self, fn: Callable[[Conn], T], *, interruptible: bool = False) -> T:
        job: _Job[T] = _Job(
            fn, interruptible, trio.lowlevel.current_task(), trio.lowlevel.current_trio_token()
        )
        await trio.lowlevel.checkpoint_if_cancelled()
        self._put(job)

        def abort(_: Any) -> trio.lowlevel.Abort:
            with self._lock:
                if job.state == "queued":
                    job.state = "dropped"
                    return trio.lowlevel.Abort.SUCCEEDED
                if job.state == "running" and job.interruptible and self._conn is not None:
                    self._conn.interrupt()
            return trio.lowlevel.Abort.FAILED

        try:
            result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        except sqlite3.OperationalError as exc:
            if _is_interrupt(exc):
                await trio.lowlevel.checkpoint_if_cancelled()
            raise
        return result

    def post(self, item: Any, write: Callable[[Conn, list[Any]], None]) -> None:
        """Queue `item` for `write` without blocking; consecutive posts share a batch."""
        with self._lock:
            batch = self._open_batch
            if batch is None or batch.write is not write:
                batch = self._open_batch = _Batch(write)
                self._queue.put(batch)
            batch.items.append(item)

    async def stop(self) -> None:
        """Finish queued work, close the connection, end the thread."""
        self._put(None)
        await trio.to_thread.run_sync(self._stopped.wait, abandon_on_cancel=True)

    def _put(self, job: _Job[Any] | None) -> None:
        with self._lock:
            self._open_batch = None
            self._queue.put(job)

    # --- the worker thread ------------------------------------------------------------

    def _main(self) -> None:
        try:
            self._conn = self._connect()
        except BaseException as exc:
            self._fail_all(exc)
            return
        conn = self._conn
        try:
            while True:
                job = self._queue.get()
                if job is None:
                    break
                if isinstance(job, _Batch):
                    self._run_batch(conn, job)
                else:
                    self._run_job(conn, job)
        finally:
            self._retry_unsaved(conn)
            if self.unsaved:
                log.error("%d display events could not be saved before closing", self.unsaved)
            conn.close()
            self._stopped.set()

    def _run_batch(self, conn: Conn, batch: _Batch) -> None:
        with self._lock:
            if self._open_batch is batch:
                self._open_batch = None
        self._unsaved.append(batch)
        self.unsaved += len(batch.items)
        self._retry_unsaved(conn)

    def _retry_unsaved(self, conn: Conn) -> None:
        """Write the kept batches in order; stop at the first that fails again."""
        while self._unsaved:
            batch = self._unsaved[0]
            try:
                batch.write(conn, batch.items)
            except sqlite3.OperationalError as exc:  # full, I/O, locked: may pass
                self.batch_errors += 1
                log.warning(
                    "the session store could not write %d display events (%s); "
                    "they are kept and written again before the next write",
                    self.unsaved,
                    exc,
                )
                self._bound_unsaved()
                return
            except Exception:
                self.batch_errors += 1
                log.exception("the session store dropped %d display events", len(batch.items))
            self._unsaved.pop(0)
            self.unsaved -= len(batch.items)

    def _bound_unsaved(self) -> None:
        while self.unsaved > MAX_UNSAVED and len(self._unsaved) > 1:
            dropped = self._unsaved.pop(0)
            self.unsaved -= len(dropped.items)
            log.error(
                "the session store dropped %d display events: still failing", len(dropped.items)
            )

    def _run_job(self, conn: Conn, job: _Job[Any]) -> None:
        with self._lock:
            if job.state == "dropped":
                return
            job.state = "running"
        if not job.interruptible:  # a write: the events recorded before it go first
            self._retry_unsaved(conn)
        result = outcome.capture(job.fn, conn)
        with self._lock:
            job.state = "done"
        job.token.run_sync_soon(trio.lowlevel.reschedule, job.task, result)

    def _fail_all(self, exc: BaseException) -> None:
        """The connection could not open: fail every caller, now and later."""
        while True:
            job = self._queue.get()
            if job is None:
                self._stopped.set()
                return
            if isinstance(job, _Job):
                with self._lock:
                    if job.state == "dropped":
                        continue
                    job.state = "done"
                error: outcome.Outcome[Any] = outcome.Error(exc)
                job.token.run_sync_soon(trio.lowlevel.reschedule, job.task, error)


def _is_interrupt(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and str(exc) == "interrupted"
