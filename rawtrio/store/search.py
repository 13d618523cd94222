"""Full-text search across sessions (SQLite FTS5 over the display history).

What is indexed: prompts, replies, interrupted partial replies, tool results (prefixed by
the tool name) and notices; streaming deltas are not (their text is in the message they
became). The user's query is taken as words, all of which must match (prefix matching
with a trailing `*`); FTS operators are not exposed, so any input is a valid query.
"""

from __future__ import annotations

import re

from rawtrio.store import ops
from rawtrio.store.base import SearchHit


def fts_query(query: str) -> str | None:
    """The FTS5 expression for a user's words; None when there are none."""
    terms = []
    for word in re.findall(r"[\w*]+", query):
        prefix = word.endswith("*")
        word = word.strip("*")
        if word:
            terms.append(f'"{word}"' + ("*" if prefix else ""))
    return " ".join(terms) or None


def search(conn: ops.Conn, query: str, cwd: str | None, limit: int) -> list[SearchHit]:
    expression = fts_query(query)
    if expression is None:
        return []
    where = "AND s.cwd = ?" if cwd is not None else ""
    rows = conn.execute(
        "SELECT e.session_id, s.title, s.cwd, e.seq, e.type, "
        "snippet(events_fts, 0, '[', ']', '…', 12) "
        "FROM events_fts JOIN events e ON e.id = events_fts.rowid "
        f"JOIN sessions s ON s.id = e.session_id WHERE events_fts MATCH ? {where} "
        "ORDER BY rank LIMIT ?",
        (expression, *((cwd,) if cwd is not None else ()), max(1, limit)),
    )
    return [SearchHit(*r) for r in rows]


def matches(query: str, text: str) -> bool:
    """The same rule for stores without FTS: every word occurs, case-insensitively."""
    words = [w.strip("*").lower() for w in re.findall(r"[\w*]+", query) if w.strip("*")]
    low = text.lower()
    return bool(words) and all(w in low for w in words)
