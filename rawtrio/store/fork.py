"""Forking a session: a new session that starts from a prefix of another.

The fork copies the first `up_to` messages of the model context (extended to the end of
a tool-results batch, so every kept call keeps its results) and the display history up
to the same point: each context row remembers the last display event stored before its
commit (`after_seq`), and the display cut drops the streaming residue (deltas, step
starts) of the first message not kept. Calls whose results were still missing in the
source (a turn running there) get results as crash recovery would give them. The source
is not changed; the fork records where it came from (`forked_from`, `forked_at`).
"""

from __future__ import annotations

import time

from rawtrio import events as ev
from rawtrio.store import ops
from rawtrio.store.base import SessionRecord

_TRANSIENT = ("step_started", "text_delta", "thinking_delta", "tool_call_announced", "usage")


def fork(
    conn: ops.Conn, source_id: str, session_id: str, up_to: int | None, title: str | None
) -> SessionRecord:
    with ops.write_txn(conn):
        src = ops.get_session(conn, source_id)
        keep = src.message_count if up_to is None else max(0, min(up_to, src.message_count))
        while keep < src.message_count and _role(conn, source_id, keep) == "tool":
            keep += 1
        if keep < src.message_count:
            row = conn.execute(
                "SELECT after_seq FROM context WHERE session_id = ? AND position = ?",
                (source_id, keep),
            ).fetchone()
            bound = int(row[0])
        else:
            bound = ops.last_seq(conn, source_id)
        cut = (
            conn.execute(
                "SELECT max(seq) FROM events WHERE session_id = ? AND seq <= ? "
                f"AND type NOT IN ({', '.join('?' * len(_TRANSIENT))})",
                (source_id, bound, *_TRANSIENT),
            ).fetchone()[0]
            or 0
        )
        now = time.time()
        record = SessionRecord(
            session_id,
            title or f"{src.title} (fork)",
            src.cwd,
            src.system_prompt,
            src.provider,
            src.model,
            now,
            now,
        )
        ops.create_session_row(conn, record)
        conn.execute(
            "UPDATE sessions SET forked_from = ?, forked_at = ?, message_count = ? WHERE id = ?",
            (source_id, keep, keep, session_id),
        )
        # Rows a compaction replaced after the cut are the fork's context again.
        conn.execute(
            "INSERT INTO context "
            "(session_id, position, turn_id, role, after_seq, body, replaced_at) "
            "SELECT ?, position, turn_id, role, min(after_seq, ?), body, "
            "CASE WHEN replaced_at < ? THEN replaced_at END FROM context "
            "WHERE session_id = ? AND position < ?",
            (session_id, cut, keep, source_id, keep),
        )
        conn.execute(
            "INSERT INTO events (session_id, seq, turn_id, type, body, text) "
            "SELECT ?, seq, turn_id, type, body, text FROM events "
            "WHERE session_id = ? AND seq <= ?",
            (session_id, source_id, cut),
        )
        for table in ("started_calls", "state"):
            cols = "call_id, turn_id, started_at" if table == "started_calls" else "key, value"
            conn.execute(
                f"INSERT INTO {table} (session_id, {cols}) "
                f"SELECT ?, {cols} FROM {table} WHERE session_id = ?",
                (session_id, source_id),
            )
        ops.repair(conn, session_id)
        notice = ev.Notice(
            session_id=session_id,
            seq=ops.last_seq(conn, session_id) + 1,
            level="info",
            text=f"forked from session {source_id} ({src.title or 'untitled'}) "
            f"after message {keep} of {src.message_count}",
        )
        ops.insert_events(conn, [notice])
        return ops.get_session(conn, session_id)


def _role(conn: ops.Conn, session_id: str, position: int) -> str | None:
    row = conn.execute(
        "SELECT role FROM context WHERE session_id = ? AND position = ?", (session_id, position)
    ).fetchone()
    return None if row is None else str(row[0])
