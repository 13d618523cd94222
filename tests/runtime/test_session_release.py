"""A long-running runtime keeps only the sessions that are open (issue: memory grew with
every closed session). The figure over 1,000 sessions is in stress/bench/bench_memory.py."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from rawtrio.contracts import TurnOutcome
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import REMEMBER_ENDED, Session, SessionOptions
from rawtrio.store.memory import MemoryStore
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from tests.conftest import provider_for

SCENARIO = {"rules": [{"match": "*", "replies": [{"text": "ok"}]}]}


async def test_closed_sessions_leave_the_runtime_with_their_clients_and_lease_files(
    tmp_path: Path,
) -> None:
    db = tmp_path / "sessions.db"
    gone: list[weakref.ref[Session]] = []
    closed_ids: list[str] = []
    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        SqliteStore(db) as store,
        open_runtime(store, retention_days=0) as runtime,
    ):
        options = SessionOptions(cwd=tmp_path, provider=provider_for(server, "anthropic"))
        kept = await runtime.create_session(options)
        for _ in range(5):
            session = await runtime.create_session(options)
            assert (await session.run_turn("hello")).outcome is TurnOutcome.COMPLETED
            await session.close()
            gone.append(weakref.ref(session))
            closed_ids.append(session.id)
        del session
        assert runtime.live_sessions == (kept.id,)
        assert [p.name for p in store.leases.dir.iterdir()] == [f"{kept.id}.lock"]
        gc.collect()
        assert [r() for r in gone] == [None] * 5  # nothing holds a closed session
        # A closed session opens again from the store, and its lease comes back.
        again = await runtime.open_session(closed_ids[0], options)
        assert set(runtime.live_sessions) == {kept.id, again.id}


async def test_a_session_remembers_a_bounded_number_of_turn_endings(tmp_path: Path) -> None:
    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        open_runtime(MemoryStore(), retention_days=0) as runtime,
    ):
        options = SessionOptions(cwd=tmp_path, provider=provider_for(server, "anthropic"))
        session = await runtime.create_session(options)
        ids = [await session.submit("hello")]
        await session.wait_turn(ids[0])
        for _ in range(REMEMBER_ENDED):
            ids.append((await session.run_turn("hello")).turn_id or "")
        with pytest.raises(KeyError, match="not kept"):
            await session.wait_turn(ids[0])
        assert (await session.wait_turn(ids[-1])).outcome is TurnOutcome.COMPLETED
