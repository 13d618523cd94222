"""Store faults: SQLite decides what is corrupt, failed display events come back, and a
released lease leaves no file behind."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from rawtrio import events as ev
from rawtrio.errors import SessionLocked
from rawtrio.store.lease import Leases
from rawtrio.store.sqlite import SqliteStore
from tests.store.conftest import new_session


async def test_sessions_survive_a_checkpoint_cut_short_by_a_full_disk(tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    async with SqliteStore(src) as store:
        await new_session(store, "kept")
    # Rebuild it the way a checkpoint cut short leaves it, from a copy with a live WAL.
    conn = sqlite3.connect(src, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE sessions SET title = 'after the fault'")
    conn.execute("CREATE TABLE padding (x)")
    conn.executemany("INSERT INTO padding VALUES (?)", [("x" * 500,)] * 200)
    conn.execute("COMMIT")
    db = tmp_path / "sessions.db"
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{src}{suffix}", f"{db}{suffix}")
    full = tmp_path / "full.db"
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{src}{suffix}", f"{full}{suffix}")
    conn.close()
    check = sqlite3.connect(full)
    check.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    check.close()
    with db.open("r+b") as f:  # page 1 (with the new page count) made it, nothing else did
        f.write(full.read_bytes()[:4096])
    assert db.stat().st_size < int.from_bytes(db.read_bytes()[28:32], "big") * 4096
    async with SqliteStore(db) as store:
        assert store.unusable is None
        assert store.path == db
        records = await store.list_sessions()
        assert [(r.id, r.title) for r in records] == [("kept", "after the fault")]


async def test_display_events_that_hit_a_full_disk_are_written_once_it_clears(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "sessions.db") as store:
        await new_session(store)
        pages = await store._worker.call(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
        await store._worker.call(lambda c: c.execute(f"PRAGMA max_page_count = {pages}"))
        big = "y" * 100_000
        for seq in (1, 2):
            store.record_event(ev.with_seq(ev.Notice(session_id="s1", level="info", text=big), seq))
        assert await store.events_since("s1", 0) == []
        assert store._worker.unsaved == 2
        await store._worker.call(lambda c: c.execute("PRAGMA max_page_count = 1073741823"))
        await store.set_state("s1", "k", 1)  # the next write takes the kept events first
        assert [e.seq for e in await store.events_since("s1", 0)] == [1, 2]
        assert store._worker.unsaved == 0


async def test_a_released_lease_leaves_no_file_and_can_be_taken_again(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    async with SqliteStore(db) as store:
        for n in range(5):
            await new_session(store, f"s{n}")
            await store.close_session(f"s{n}")
        leases = store.leases
        assert list(leases.dir.iterdir()) == []
        await store.open_for_write("s0")
        assert [p.name for p in leases.dir.iterdir()] == ["s0.lock"]
    assert list(leases.dir.iterdir()) == []


def test_after_a_lease_file_is_removed_one_holder_at_a_time(tmp_path: Path) -> None:
    a, b, c = (Leases(tmp_path / "sessions.db") for _ in range(3))
    a.acquire("s")
    a.release("s")
    assert not a.path("s").exists()
    b.acquire("s")
    with pytest.raises(SessionLocked):
        c.acquire("s")
    b.release("s")
    c.acquire("s")
    c.release("s")
    assert not a.path("s").exists()
