"""One writer per session across processes, released by a crash (real second process).

POSIX record locks never conflict inside one process, so these tests hold the lease in a
real child process (`tests.store.child hold`) and kill it with SIGKILL.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from rawtrio.errors import SessionLocked
from rawtrio.messages import UserMessage
from rawtrio.store.sqlite import SqliteStore
from tests.store.conftest import new_session

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(sys.platform == "win32", reason="flock and SIGKILL")
async def test_a_second_process_reads_but_cannot_write_until_the_holder_dies(
    tmp_path: Path,
) -> None:
    db = tmp_path / "sessions.db"
    async with SqliteStore(db) as store:
        await new_session(store)
        await store.close_session("s1")
    holder = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.store.child", "hold", str(db), "s1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        with trio.fail_after(60):
            out = b""
            while b"ready" not in out:
                chunk = await holder.stdout.receive_some()
                assert chunk, "the holder ended before taking the lease"
                out += chunk
        async with SqliteStore(db) as store:
            assert (await store.get_session("s1")).id == "s1"  # reading is allowed
            with pytest.raises(
                SessionLocked, match=rf"open in another process \(pid {holder.pid}\)"
            ):
                await store.open_for_write("s1")
            with pytest.raises(SessionLocked):
                await store.begin_turn("s1", "t1", None)
            with pytest.raises(SessionLocked):
                await store.rename_session("s1", "x")
            assert await store.expire_sessions(1e-9) == []  # in use elsewhere: kept
            holder.send_signal(signal.SIGKILL)
            assert await holder.wait() == -signal.SIGKILL
            await store.open_for_write("s1")
            await store.begin_turn("s1", "t1", None)
            await store.commit("s1", "t1", [UserMessage("mine now")])
            assert await store.load_context("s1") == [UserMessage("mine now")]
    finally:
        with trio.CancelScope(shield=True):
            if holder.poll() is None:
                holder.kill()
            await holder.wait()
            if holder.stdout is not None:
                await holder.stdout.aclose()


async def test_the_lease_is_released_by_close_session(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    async with SqliteStore(db) as a, SqliteStore(db) as b:
        await new_session(a)
        with pytest.raises(SessionLocked):
            await b.open_for_write("s1")
        await a.close_session("s1")
        await b.open_for_write("s1")
        with pytest.raises(SessionLocked):
            await a.set_state("s1", "k", 1)
        await trio.lowlevel.checkpoint()
