"""A store fault at any commit point ends that turn with `error`; nothing else goes down.

The real `SqliteStore`, wrapped in `rawtrio.testing.faulty_store.FaultyStore`, fails the
Nth write of a turn with the store's own errors. A dry run counts the turn's writes, then
every one of them is failed in turn. (A real full file system: tests/acp/test_full_disk.py.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import check_pairing
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.runtime.subscribers import Subscription
from rawtrio.store.errors import StoreError
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.testing.faulty_store import FaultKind, FaultyStore
from rawtrio.tools.settings import ToolSettings
from tests.conftest import LIVENESS_S, provider_for

SCENARIO = {
    "rules": [
        {
            "match": "run it",
            "replies": [
                {
                    "text": "Running.",
                    "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}],
                },
                {"text": "It printed hi."},
            ],
        },
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}
TOOLS = ToolSettings(sigterm_grace_s=0.2, bash_timeout_s=30)


def _options(cwd: Path, provider: ProviderSettings) -> SessionOptions:
    return SessionOptions(cwd=cwd, provider=provider, tools=TOOLS)


async def _turn_writes(tmp_path: Path) -> list[str]:
    """The commit points of one tool-using turn, in order (a dry run, nothing fails)."""
    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        SqliteStore(tmp_path / "dry.db") as inner,
    ):
        store = FaultyStore(inner)
        async with open_runtime(store, retention_days=0) as runtime:
            options = SessionOptions(
                cwd=tmp_path, provider=provider_for(server, "anthropic"), tools=TOOLS
            )
            session = await runtime.create_session(options)
            before = store.writes
            ended = await session.run_turn("run it")
            assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
            return store.points[before:]


async def test_a_turn_has_commit_points_to_fail(tmp_path: Path) -> None:
    points = await _turn_writes(tmp_path)
    assert points[0] == "begin_turn"
    assert {"commit", "mark_call_started", "end_turn"} <= set(points)


@pytest.mark.parametrize("kind", ["full", "io", "locked"])
async def test_a_store_error_at_every_commit_point_ends_only_that_turn(
    tmp_path: Path, kind: FaultKind
) -> None:
    points = await _turn_writes(tmp_path / "dry")
    for n, point in enumerate(points, start=1):
        place = tmp_path / f"{kind}-{n}"
        place.mkdir()
        await _fail_one_point(place, n, point, kind)


async def _fail_one_point(tmp_path: Path, n: int, point: str, kind: FaultKind) -> None:
    db = tmp_path / "sessions.db"
    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        SqliteStore(db) as inner,
    ):
        store = FaultyStore(inner)
        async with open_runtime(store, retention_days=0) as runtime:
            options = SessionOptions(
                cwd=tmp_path, provider=provider_for(server, "anthropic"), tools=TOOLS
            )
            session = await runtime.create_session(options)
            other = await runtime.create_session(options)
            assert (await other.run_turn("hello")).outcome is TurnOutcome.COMPLETED
            committed = list(session.context)
            # The n-th write of the turn fails, and so does every write after it until healed.
            store.arm(at=n, times=1000, kind=kind)
            with trio.fail_after(LIVENESS_S), session.subscribe() as sub:
                if point == "begin_turn":  # the very first write: no turn starts at all
                    with pytest.raises(StoreError, match="injected fault"):
                        await session.submit("run it")
                else:
                    turn_id = await session.submit("run it")
                    ended = await session.wait_turn(turn_id)
                    assert ended.outcome is TurnOutcome.ERROR, (n, point, ended)
                    assert "injected fault" in ended.reason, (n, point, ended.reason)
                    seen = [e async for e in _until_ended(sub)]
                    assert [e for e in seen if isinstance(e, ev.TurnEnded)] == [ended]
            assert store.failed[0].endswith(f":{point}"), (n, store.failed)
            # The runtime and the other session are untouched; a new session can open.
            assert not session.closed
            assert not other.closed
            assert set(runtime.live_sessions) >= {session.id, other.id}
            # While the fault lasts, a new turn gets the store's error, not a stuck session.
            with pytest.raises(StoreError):
                await session.submit("hello again")
            store.heal()
            again = await session.run_turn("hello again")
            assert again.outcome is TurnOutcome.COMPLETED, (n, point, again.reason)
            assert (await other.run_turn("still there")).outcome is TurnOutcome.COMPLETED
            assert check_pairing(session.context) == []
            stored = await store.load_context(session.id)
            assert stored == session.context, (n, point)
            assert stored[: len(committed)] == committed
    # Nothing committed before is lost, and the file is whole: reopen and read it back.
    async with SqliteStore(db) as reopened:
        ids = {r.id for r in await reopened.list_sessions()}
        assert ids == {session.id, other.id}
        assert await reopened.load_context(session.id) == stored
        assert check_pairing(stored) == []


async def _until_ended(sub: Subscription) -> AsyncIterator[ev.Event]:
    async for event in sub:
        yield event
        if isinstance(event, ev.TurnEnded):
            return


async def test_a_fault_after_the_outcome_was_stored_leaves_the_outcome_as_stored(
    tmp_path: Path,
) -> None:
    """Found by the stress suite's store-fault scenario: a cancelled turn whose note could not
    be saved (the write after `end_turn`) must not tell front ends `error` while the store
    holds `cancelled` (I2); the note is written before the next turn."""
    scenario = {
        "rules": [
            {
                "match": "sleep",
                "replies": [
                    {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
                    {"text": "slept"},
                ],
            },
            {"match": "*", "replies": [{"text": "ok"}]},
        ]
    }
    async with (
        open_fake_model_server(Scenario.from_dict(scenario)) as server,
        SqliteStore(tmp_path / "sessions.db") as inner,
    ):
        store = FaultyStore(inner)
        async with open_runtime(store, retention_days=0) as runtime:
            session = await runtime.create_session(
                _options(tmp_path, provider_for(server, "anthropic"))
            )
            with trio.fail_after(LIVENESS_S), session.subscribe() as sub:
                turn_id = await session.submit("sleep now", client_request_id="r1")
                async for event in sub:
                    if isinstance(event, ev.ToolCallStarted):
                        break
                # The ending writes: the cut call's result, usage, the outcome, the note.
                store.arm(at=4, times=1)
                session.cancel("test cancel")
                ended = await session.wait_turn(turn_id)
            assert store.failed, "the armed fault never fired"
            assert store.failed[0].endswith("set_state"), store.failed
            record = await store.find_turn(session.id, "r1")
            assert record is not None
            assert ended.outcome is TurnOutcome.CANCELLED
            assert record.outcome is TurnOutcome.CANCELLED
            again = await session.run_turn("hello")
            assert again.outcome is TurnOutcome.COMPLETED
            assert check_pairing(session.context) == []
