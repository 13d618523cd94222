"""The store's operations as plain functions of a connection, run on the worker thread.

Every write is one `BEGIN IMMEDIATE` transaction (`write_txn`): taking the write lock up
front avoids WAL's "database is locked" on upgrade (STACK-NOTES). Commit points of the
turn contract run with `synchronous=FULL`, so they are on disk when the loop moves on;
display-event batches use `NORMAL` (an fsync of a later commit covers them too).

Text from outside rawtrio's control is bound through `codec.text` / `codec.dumps`, which
store a lone surrogate as U+FFFD instead of failing the write (see `codec`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.errors import UnknownSession
from rawtrio.messages import Message, UserMessage
from rawtrio.store import codec, recovery
from rawtrio.store.base import HistoryPage, SessionRecord, TurnRecord
from rawtrio.store.titles import title_from_prompt

Conn = sqlite3.Connection
_SESSION_COLUMNS = (
    "id, title, cwd, system_prompt, provider, model, created_at, updated_at, message_count, "
    "parent_id, parent_call_id, depth"
)


@contextmanager
def write_txn(conn: Conn, *, durable: bool = True) -> Iterator[None]:
    conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _record(row: Sequence[Any]) -> SessionRecord:
    return SessionRecord(*row)


def get_session(conn: Conn, session_id: str) -> SessionRecord:
    row = conn.execute(
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise UnknownSession(session_id)
    return _record(row)


def require(conn: Conn, session_id: str) -> None:
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise UnknownSession(session_id)


def create_session(conn: Conn, record: SessionRecord) -> None:
    with write_txn(conn):
        create_session_row(conn, record)


def create_session_row(conn: Conn, r: SessionRecord) -> None:
    conn.execute(
        f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
        (
            r.id,
            codec.text(r.title),
            codec.text(r.cwd),
            codec.text(r.system_prompt),
            r.provider,
            codec.text(r.model),
            r.created_at,
            r.updated_at,
            r.parent_id,
            r.parent_call_id,
            r.depth,
        ),
    )


def expired(conn: Conn, before: float) -> list[str]:
    """Sessions without committed conversation activity since `before`, oldest first."""
    rows = conn.execute(
        "SELECT id FROM sessions WHERE updated_at < ? ORDER BY updated_at", (before,)
    )
    return [r[0] for r in rows]


def list_sessions(conn: Conn, cwd: str | None) -> list[SessionRecord]:
    where, args = ("AND cwd = ?", (codec.text(cwd),)) if cwd is not None else ("", ())
    rows = conn.execute(
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE parent_id IS NULL {where} "
        "ORDER BY updated_at DESC",
        args,
    )
    return [_record(r) for r in rows]


def list_children(conn: Conn, parent_id: str) -> list[SessionRecord]:
    rows = conn.execute(
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE parent_id = ? ORDER BY created_at",
        (parent_id,),
    )
    return [_record(r) for r in rows]


def rename(conn: Conn, session_id: str, title: str) -> None:
    with write_txn(conn):
        require(conn, session_id)
        conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (codec.text(title), session_id))


def delete(conn: Conn, session_id: str) -> None:
    with write_txn(conn):
        require(conn, session_id)
        _delete_rows(conn, session_id)


def delete_if_idle(conn: Conn, session_id: str, before: float) -> bool:
    """Expiry's delete: only if still without activity since `before` (checked in-txn)."""
    with write_txn(conn):
        row = conn.execute("SELECT updated_at FROM sessions WHERE id = ?", (session_id,))
        found = row.fetchone()
        if found is None or found[0] >= before:
            return False
        _delete_rows(conn, session_id)
    return True


def _delete_rows(conn: Conn, session_id: str) -> None:
    for table in ("events", "context", "turns", "started_calls", "state"):
        conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))


def load_context(conn: Conn, session_id: str) -> list[Message]:
    require(conn, session_id)
    rows = conn.execute(
        "SELECT body FROM context WHERE session_id = ? AND replaced_at IS NULL ORDER BY position",
        (session_id,),
    )
    return [codec.message_from_row(r[0]) for r in rows]


def replace_context(
    conn: Conn, session_id: str, turn_id: str | None, messages: Sequence[Message]
) -> None:
    """Compaction: the model context becomes `messages`; the old rows stay, marked."""
    with write_txn(conn):
        row = conn.execute(
            "SELECT message_count FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise UnknownSession(session_id)
        conn.execute(
            "UPDATE context SET replaced_at = ? WHERE session_id = ? AND replaced_at IS NULL",
            (row[0], session_id),
        )
        append_messages(conn, session_id, turn_id, messages)


def last_seq(conn: Conn, session_id: str) -> int:
    row = conn.execute("SELECT max(seq) FROM events WHERE session_id = ?", (session_id,))
    return int(row.fetchone()[0] or 0)


def append_messages(
    conn: Conn, session_id: str, turn_id: str | None, messages: Sequence[Message]
) -> None:
    """Append to the model context inside the caller's transaction."""
    row = conn.execute(
        "SELECT message_count, title FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise UnknownSession(session_id)
    count, title = row
    after = last_seq(conn, session_id)
    conn.executemany(
        "INSERT INTO context (session_id, position, turn_id, role, after_seq, body) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (session_id, count + i, turn_id, m.role, after, codec.message_to_row(m))
            for i, m in enumerate(messages)
        ],
    )
    first_user = next((m for m in messages if isinstance(m, UserMessage)), None)
    if not title and first_user is not None:
        title = title_from_prompt(first_user.text)
    conn.execute(
        "UPDATE sessions SET message_count = ?, updated_at = ?, title = ? WHERE id = ?",
        (count + len(messages), time.time(), codec.text(title), session_id),
    )


def commit(conn: Conn, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
    with write_txn(conn):
        append_messages(conn, session_id, turn_id, messages)


def insert_events(conn: Conn, events: Sequence[ev.Event]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO events (session_id, seq, turn_id, type, body, text) "
        "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?)",
        [
            (
                e.session_id,
                e.seq,
                e.turn_id,
                e.type,
                codec.event_to_row(e),
                codec.searchable_text(e),
                e.session_id,
            )
            for e in events
        ],
    )


def write_event_batch(conn: Conn, events: list[ev.Event]) -> None:
    with write_txn(conn, durable=False):
        insert_events(conn, events)


def begin_turn(conn: Conn, session_id: str, turn_id: str, request_id: str | None) -> None:
    with write_txn(conn):
        require(conn, session_id)
        conn.execute(
            "INSERT INTO turns (session_id, id, client_request_id, started_at) VALUES (?,?,?,?)",
            (session_id, turn_id, codec.text(request_id), time.time()),
        )


def find_turn(conn: Conn, session_id: str, request_id: str) -> TurnRecord | None:
    require(conn, session_id)
    row = conn.execute(
        "SELECT id, client_request_id, outcome, reason FROM turns "
        "WHERE session_id = ? AND client_request_id = ?",
        (session_id, codec.text(request_id)),
    ).fetchone()
    if row is None:
        return None
    return TurnRecord(row[0], row[1], TurnOutcome(row[2]) if row[2] else None, row[3])


def end_turn(conn: Conn, session_id: str, turn_id: str, outcome: str, reason: str) -> None:
    with write_txn(conn):
        row = conn.execute(
            "SELECT outcome FROM turns WHERE session_id = ? AND id = ?", (session_id, turn_id)
        ).fetchone()
        if row is None:
            require(conn, session_id)
            raise KeyError(f"no turn {turn_id} in session {session_id}")
        if row[0] is not None:
            raise RuntimeError(f"turn {turn_id} already has an outcome ({row[0]})")
        conn.execute(
            "UPDATE turns SET outcome = ?, reason = ?, ended_at = ? "
            "WHERE session_id = ? AND id = ?",
            (outcome, codec.text(reason), time.time(), session_id, turn_id),
        )


def mark_call_started(conn: Conn, session_id: str, turn_id: str, call_id: str) -> None:
    with write_txn(conn):
        require(conn, session_id)
        conn.execute(
            "INSERT OR REPLACE INTO started_calls (session_id, call_id, turn_id, started_at) "
            "VALUES (?, ?, ?, ?)",
            (session_id, call_id, turn_id, time.time()),
        )


def get_state(conn: Conn, session_id: str, key: str) -> Any:
    require(conn, session_id)
    row = conn.execute(
        "SELECT value FROM state WHERE session_id = ? AND key = ?", (session_id, key)
    ).fetchone()
    return None if row is None else json.loads(row[0])


def set_state(conn: Conn, session_id: str, key: str, value: Any) -> None:
    with write_txn(conn):
        require(conn, session_id)
        conn.execute(
            "INSERT OR REPLACE INTO state (session_id, key, value) VALUES (?, ?, ?)",
            (session_id, key, codec.dumps(value)),
        )


def prompt_position(conn: Conn, session_id: str, turn_id: str) -> int | None:
    """The context position of turn `turn_id`'s prompt (`SessionStore.prompt_position`)."""
    require(conn, session_id)
    row = conn.execute(
        "SELECT min(seq) FROM events WHERE session_id = ? AND turn_id = ? AND type = ?",
        (session_id, turn_id, ev.UserMessageCommitted.type),
    ).fetchone()
    if row is None or row[0] is None:
        return None
    before = conn.execute(
        "SELECT count(*) FROM context WHERE session_id = ? AND after_seq < ?",
        (session_id, int(row[0])),
    ).fetchone()
    return max(0, int(before[0]) - 1)


def events_since(conn: Conn, session_id: str, seq: int) -> list[ev.Event]:
    require(conn, session_id)
    rows = conn.execute(
        "SELECT body FROM events WHERE session_id = ? AND seq > ? ORDER BY seq", (session_id, seq)
    )
    return [e for r in rows if (e := codec.event_from_row(r[0], session_id)) is not None]


def history(
    conn: Conn, session_id: str, cursor: str | None, limit: int, newest_first: bool
) -> HistoryPage:
    require(conn, session_id)
    limit = max(1, limit)
    if newest_first:
        bound = codec.decode_cursor(cursor, True) if cursor else 2**62
        sql = "seq < ? ORDER BY seq DESC"
    else:
        bound = codec.decode_cursor(cursor, False) if cursor else -1
        sql = "seq > ? ORDER BY seq ASC"
    rows = conn.execute(
        f"SELECT seq, body FROM events WHERE session_id = ? AND {sql} LIMIT ?",
        (session_id, bound, limit + 1),
    ).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    events = tuple(e for r in rows if (e := codec.event_from_row(r[1], session_id)) is not None)
    cursor_out = codec.encode_cursor(newest_first, rows[-1][0]) if more else None
    return HistoryPage(events, cursor_out)


def recover(conn: Conn, session_id: str) -> recovery.RecoveryReport:
    """Repair what a killed writer left (see `recovery`); a no-op after a clean end."""
    with write_txn(conn):
        require(conn, session_id)
        return repair(conn, session_id)


def repair(conn: Conn, session_id: str) -> recovery.RecoveryReport:
    """`recover` inside the caller's transaction."""
    turns = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM turns WHERE session_id = ? AND outcome IS NULL ORDER BY started_at",
            (session_id,),
        )
    ]
    last = conn.execute(
        "SELECT position, turn_id FROM context WHERE session_id = ? AND role = 'assistant' "
        "AND replaced_at IS NULL ORDER BY position DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    results = []
    if last is not None:
        tail = [
            codec.message_from_row(r[0])
            for r in conn.execute(
                "SELECT body FROM context WHERE session_id = ? AND position >= ? "
                "AND replaced_at IS NULL ORDER BY position",
                (session_id, last[0]),
            )
        ]
        started = {
            r[0]
            for r in conn.execute(
                "SELECT call_id FROM started_calls WHERE session_id = ?", (session_id,)
            )
        }
        results = recovery.missing_results(tail, started)
    unreported = _unreported_outcome(conn, session_id)
    if not turns and not results and unreported is None:
        return recovery.RecoveryReport()
    turn_of_results = last[1] if last is not None else None
    if results:
        append_messages(conn, session_id, turn_of_results, results)
    events = recovery.recovery_events(
        session_id, turn_of_results, results, turns, last_seq(conn, session_id) + 1, unreported
    )
    insert_events(conn, events)
    conn.executemany(
        "UPDATE turns SET outcome = ?, reason = ?, ended_at = ? WHERE session_id = ? AND id = ?",
        [
            (TurnOutcome.INTERRUPTED.value, recovery.REASON, time.time(), session_id, t)
            for t in turns
        ],
    )
    return recovery.RecoveryReport(tuple(turns), tuple(results))


def _unreported_outcome(conn: Conn, session_id: str) -> tuple[str, TurnOutcome, str] | None:
    """The latest ended turn, if its `turn_ended` event never reached the history."""
    latest = conn.execute(
        "SELECT id, outcome, reason FROM turns WHERE session_id = ? AND outcome IS NOT NULL "
        "ORDER BY started_at DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    if latest is None:
        return None
    shown = conn.execute(
        "SELECT turn_id FROM events WHERE session_id = ? AND type = 'turn_ended' "
        "ORDER BY seq DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    if shown is not None and shown[0] == latest[0]:
        return None
    return latest[0], TurnOutcome(latest[1]), latest[2]
