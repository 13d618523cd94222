"""The database file: durability across reopen, migrations, files rawtrio cannot use."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
import trio

from rawtrio.messages import UserMessage, check_pairing
from rawtrio.store import schema
from rawtrio.store.errors import StoreFull
from rawtrio.store.paths import STATE_DIR_ENV, default_db_path
from rawtrio.store.sqlite import SqliteStore
from tests.store.conftest import new_session
from tests.store.transcript import write_turn


def test_state_dir_env_overrides_the_default_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path))
    assert default_db_path() == tmp_path / "sessions.db"
    monkeypatch.delenv(STATE_DIR_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "rawtrio" / "sessions.db"


async def test_everything_survives_a_reopen_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    async with SqliteStore(db) as store:
        await new_session(store)
        await write_turn(store, "s1", "t1", "go", 0)
    mode = sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    async with SqliteStore(db) as store:
        assert len(await store.load_context("s1")) == 5
        assert await store.last_seq("s1") > 0
        assert (await store.get_session("s1")).title == "go"


async def _fill_older_version(db: Path, version: int) -> None:
    """A database as rawtrio with only the first `version` migrations wrote it."""
    conn = sqlite3.connect(db, isolation_level=None)
    schema.migrate(conn, db, upto=version)
    conn.close()
    if version == 0:
        return
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(
        "INSERT INTO sessions (id, title, cwd, system_prompt, provider, model, created_at, "
        "updated_at, message_count) VALUES ('old', 'kept', '/w', 'sys', 'anthropic', 'm', 1, 2, 1)"
    )
    conn.execute(
        "INSERT INTO context (session_id, position, turn_id, role, after_seq, body) "
        "VALUES ('old', 0, 't', 'user', 1, ?)",
        ('{"role":"user","text":"findable words"}',),
    )
    body = '{"v":1,"seq":1,"type":"user_message","session_id":"old","text":"findable words"}'
    if version >= 2:  # from m002_search on, rawtrio writes the searchable text too
        conn.execute(
            "INSERT INTO events (session_id, seq, turn_id, type, body, text) "
            "VALUES ('old', 1, 't', 'user_message', ?, 'findable words')",
            (body,),
        )
    else:
        conn.execute(
            "INSERT INTO events (session_id, seq, turn_id, type, body) "
            "VALUES ('old', 1, 't', 'user_message', ?)",
            (body,),
        )
    conn.close()


@pytest.mark.parametrize("version", range(len(schema.MIGRATIONS)))
async def test_migrates_from_every_earlier_schema(tmp_path: Path, version: int) -> None:
    db = tmp_path / "sessions.db"
    await _fill_older_version(db, version)
    async with SqliteStore(db) as store:
        assert store.path == db
        if version:
            assert await store.load_context("old") == [UserMessage("findable words")]
            hits = await store.search("findable")
            assert [h.session_id for h in hits] == ["old"]
        await new_session(store, "new")
    conn = sqlite3.connect(db)
    names = [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")]
    assert names == [m.name for m in schema.MIGRATIONS]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)


def _garbage(db: Path) -> None:
    db.write_bytes(b"this is not a database at all\n" * 200)


def _truncated(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
    conn.commit()
    conn.close()
    db.write_bytes(db.read_bytes()[: 4096 * 3 + 100])


def _foreign(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE sessions (id, data)")
    conn.commit()
    conn.close()


def _newer(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    schema.migrate(conn, db)
    conn.execute(f"PRAGMA user_version = {len(schema.MIGRATIONS) + 1}")
    conn.close()


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_garbage, "not a SQLite database"),
        (_truncated, "damaged"),
        (_foreign, "another program"),
        (_newer, "newer rawtrio"),
    ],
)
async def test_an_unusable_file_is_left_untouched_and_reported_once(
    tmp_path: Path, make: object, why: str
) -> None:
    db = tmp_path / f"{why.split()[0]}.db"
    make(db)  # type: ignore[operator]
    before = db.read_bytes()
    err = io.StringIO()
    for _ in range(2):
        async with SqliteStore(db, stderr=err) as store:
            assert store.path == tmp_path / f"{db.stem}.2.db"
            assert store.unusable is not None
            await new_session(store, f"s{len(await store.list_sessions())}")
    assert db.read_bytes() == before
    assert err.getvalue().count("left untouched") == 1
    assert why in err.getvalue()
    assert str(store.path) in err.getvalue()


async def test_disk_full_during_a_commit_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    async with SqliteStore(db) as store:
        await new_session(store)
        await write_turn(store, "s1", "t1", "go", 0)
        before = await store.load_context("s1")
        pages = sqlite3.connect(db).execute("PRAGMA page_count").fetchone()[0]
        await store._worker.call(lambda c: c.execute(f"PRAGMA max_page_count = {pages + 2}"))
        await store.begin_turn("s1", "t2", None)
        with pytest.raises(StoreFull, match="is full"):
            await store.commit("s1", "t2", [UserMessage("x" * 200_000)])
        assert await store.load_context("s1") == before
        assert (await store.get_session("s1")).message_count == len(before)
        await store._worker.call(lambda c: c.execute("PRAGMA max_page_count = 1073741823"))
        await store.commit("s1", "t2", [UserMessage("fits now")])
        assert check_pairing(await store.load_context("s1")) == []
        assert len(await store.load_context("s1")) == len(before) + 1


async def test_a_commit_in_a_cancelled_shielded_scope_completes(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as store:
        await new_session(store)
        await store.begin_turn("s1", "t1", None)
        with trio.CancelScope() as outer:
            outer.cancel(reason="test")
            with trio.move_on_after(10) as scope:
                scope.shield = True
                await store.commit("s1", "t1", [UserMessage("kept")])
        assert await store.load_context("s1") == [UserMessage("kept")]


async def test_a_long_read_stops_on_cancel_and_the_store_stays_usable(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as store:
        await new_session(store)
        slow = (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
        )
        with trio.move_on_after(0.2) as scope:
            await store._worker.call(lambda c: c.execute(slow).fetchone(), interruptible=True)
        assert scope.cancelled_caught
        assert (await store.get_session("s1")).id == "s1"
