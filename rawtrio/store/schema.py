"""The database schema as ordered, named, recorded migrations (STYLE.md §12).

`PRAGMA application_id` marks a file as rawtrio's; `PRAGMA user_version` is the number of
migrations applied and the `migrations` table names them. A file is migrated only when
both agree with this module; anything else — a newer rawtrio's file, another program's
database, a damaged file — is left untouched and `StoreUnusable` says why.

Add a migration by appending to `MIGRATIONS`; never edit or reorder one that shipped.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from rawtrio.store.errors import StoreError, StoreUnusable, from_sqlite

APPLICATION_ID = 0x72617774  # "rawt"


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    statements: tuple[str, ...]


M001_INITIAL = Migration(
    "m001_initial",
    (
        f"PRAGMA application_id = {APPLICATION_ID}",
        """CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)""",
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY, title TEXT NOT NULL, cwd TEXT NOT NULL,
            system_prompt TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,
            created_at REAL NOT NULL, updated_at REAL NOT NULL,
            message_count INTEGER NOT NULL DEFAULT 0)""",
        "CREATE INDEX sessions_by_cwd ON sessions(cwd, updated_at)",
        "CREATE INDEX sessions_by_update ON sessions(updated_at)",
        # The model context: `after_seq` is the last display event stored before the
        # commit, which lets a fork cut the display history where it cuts the context.
        """CREATE TABLE context (
            session_id TEXT NOT NULL, position INTEGER NOT NULL, turn_id TEXT,
            role TEXT NOT NULL, after_seq INTEGER NOT NULL, body TEXT NOT NULL,
            PRIMARY KEY (session_id, position)) WITHOUT ROWID""",
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
            turn_id TEXT, type TEXT NOT NULL, body TEXT NOT NULL,
            UNIQUE (session_id, seq))""",
        """CREATE TABLE turns (
            session_id TEXT NOT NULL, id TEXT NOT NULL, client_request_id TEXT,
            outcome TEXT, reason TEXT NOT NULL DEFAULT '', started_at REAL NOT NULL,
            ended_at REAL, PRIMARY KEY (session_id, id)) WITHOUT ROWID""",
        """CREATE UNIQUE INDEX turns_by_request ON turns(session_id, client_request_id)
            WHERE client_request_id IS NOT NULL""",
        "CREATE INDEX turns_open ON turns(session_id) WHERE outcome IS NULL",
        """CREATE TABLE started_calls (
            session_id TEXT NOT NULL, call_id TEXT NOT NULL, turn_id TEXT NOT NULL,
            started_at REAL NOT NULL, PRIMARY KEY (session_id, call_id)) WITHOUT ROWID""",
        """CREATE TABLE state (
            session_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
            PRIMARY KEY (session_id, key)) WITHOUT ROWID""",
    ),
)

M002_SEARCH = Migration(
    "m002_search",
    (
        "ALTER TABLE events ADD COLUMN text TEXT",
        """UPDATE events SET text = CASE type
            WHEN 'user_message' THEN json_extract(body, '$.text')
            WHEN 'assistant_message' THEN json_extract(body, '$.text')
            WHEN 'notice' THEN json_extract(body, '$.text')
            WHEN 'stream_interrupted' THEN json_extract(body, '$.partial_text')
            WHEN 'tool_call_finished'
                THEN json_extract(body, '$.name') || ': ' || json_extract(body, '$.content')
            END""",
        "UPDATE events SET text = NULL WHERE text = ''",
        """CREATE VIRTUAL TABLE events_fts USING fts5(
            text, content='events', content_rowid='id',
            tokenize='unicode61 remove_diacritics 2')""",
        "INSERT INTO events_fts(rowid, text) SELECT id, text FROM events WHERE text IS NOT NULL",
        """CREATE TRIGGER events_fts_insert AFTER INSERT ON events WHEN new.text IS NOT NULL
            BEGIN INSERT INTO events_fts(rowid, text) VALUES (new.id, new.text); END""",
        """CREATE TRIGGER events_fts_delete AFTER DELETE ON events WHEN old.text IS NOT NULL
            BEGIN INSERT INTO events_fts(events_fts, rowid, text)
            VALUES ('delete', old.id, old.text); END""",
    ),
)

M003_LINEAGE = Migration(
    "m003_fork_lineage",
    (
        "ALTER TABLE sessions ADD COLUMN forked_from TEXT",
        "ALTER TABLE sessions ADD COLUMN forked_at INTEGER",
    ),
)

# Compaction replaces the model context without deleting anything (I7): the replaced rows
# stay, marked with the position of the first row of the context that replaced them.
M004_COMPACTION = Migration(
    "m004_compaction",
    ("ALTER TABLE context ADD COLUMN replaced_at INTEGER",),
)

# A `task` child session hangs under its parent: the parent, the parent's call, its depth.
M005_SUBAGENTS = Migration(
    "m005_subagents",
    (
        "ALTER TABLE sessions ADD COLUMN parent_id TEXT",
        "ALTER TABLE sessions ADD COLUMN parent_call_id TEXT",
        "ALTER TABLE sessions ADD COLUMN depth INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX sessions_by_parent ON sessions(parent_id) WHERE parent_id IS NOT NULL",
    ),
)

MIGRATIONS: tuple[Migration, ...] = (
    M001_INITIAL,
    M002_SEARCH,
    M003_LINEAGE,
    M004_COMPACTION,
    M005_SUBAGENTS,
)


def judge(conn: sqlite3.Connection, path: Path, exc: sqlite3.DatabaseError) -> StoreError:
    """What a SQLite failure while opening `path` means, by SQLite's own verdict.

    "Not a database" makes the file unusable; "malformed" too, once `PRAGMA quick_check`
    (which reads the WAL as well) confirms it. Anything else — disk full, an I/O error,
    a lock held too long — says nothing about the file: a `StoreError` to retry later,
    never a reason to give up on the user's sessions.
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_NOTADB"):
        return StoreUnusable(path, "the file is not a SQLite database (corrupt or foreign)")
    if name.startswith("SQLITE_CORRUPT"):
        verdict = quick_check(conn)
        if verdict != "ok":
            return StoreUnusable(path, f"SQLite finds it damaged: {verdict} (corrupt)")
    return from_sqlite(path, "opening the database", exc)


def quick_check(conn: sqlite3.Connection) -> str:
    """SQLite's `quick_check` verdict: "ok" or its first complaints."""
    try:
        rows = conn.execute("PRAGMA quick_check(3)").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return "; ".join(str(r[0]) for r in rows) or "no answer"


def migrate(conn: sqlite3.Connection, path: Path, upto: int | None = None) -> None:
    """Bring the schema to the newest version (or to `upto` migrations, for tests)."""
    target = len(MIGRATIONS) if upto is None else upto
    try:
        _check_version(conn, path)
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = _check_version(conn, path)
                if version >= target:
                    conn.execute("COMMIT")
                    return
                m = MIGRATIONS[version]
                for statement in m.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (m.name, time.time())
                )
                conn.execute(f"PRAGMA user_version = {version + 1}")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
    except sqlite3.DatabaseError as exc:
        raise judge(conn, path, exc) from None


def check_version(conn: sqlite3.Connection, path: Path) -> int:
    """`_check_version`, with SQLite's own complaints judged (`judge`)."""
    try:
        return _check_version(conn, path)
    except sqlite3.DatabaseError as exc:
        raise judge(conn, path, exc) from None


def _check_version(conn: sqlite3.Connection, path: Path) -> int:
    """The number of migrations applied; raises `StoreUnusable` if this is not our file."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if app_id == 0 and version == 0 and not tables:
        return 0
    if app_id != APPLICATION_ID:
        raise StoreUnusable(path, "the file belongs to another program (foreign schema)")
    if version > len(MIGRATIONS):
        raise StoreUnusable(
            path,
            f"it was written by a newer rawtrio (schema {version}, this one knows "
            f"{len(MIGRATIONS)}); upgrade rawtrio to use these sessions",
        )
    if version == 0 and not tables:
        return 0
    recorded = [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")]
    if recorded != [m.name for m in MIGRATIONS[:version]]:
        raise StoreUnusable(path, f"its recorded migrations {recorded} are not rawtrio's")
    return int(version)
