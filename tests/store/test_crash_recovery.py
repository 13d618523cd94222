"""I6: `kill -9` a real rawtrio process at many points of a turn, then reopen.

The child (`tests.store.child turn`) runs a turn with two bash calls through the real
runtime, OpenAI SDK and fake model server, and kills itself with SIGKILL right before
or right after a numbered store operation. Every awaited write (begin turn, each commit,
each call-started mark, the outcome) is a kill point both before and after; display
events are sampled (every one with RAWTRIO_CRASH_ALL=1). After each kill the parent
reopens the session and checks: a valid transcript, every turn with one outcome and one
terminal event, honest results for cut calls, nothing re-run, and a next turn that the
validating fake server accepts.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import check_pairing
from rawtrio.runtime.runtime import open_runtime
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from tests.store.child import SCENARIO, options

ROOT = Path(__file__).resolve().parents[2]
LIVENESS_S = 120


async def run_child(tmp: Path, kill_at: int, when: str) -> subprocess.CompletedProcess[bytes]:
    await trio.Path(tmp).mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "tests.store.child", "turn", str(tmp / "s.db"), str(tmp)]
    return await trio.run_process(
        [*argv, str(kill_at), when], cwd=ROOT, capture_stdout=True, capture_stderr=True, check=False
    )


def kill_points(kinds: str) -> list[tuple[int, str]]:
    everything = os.environ.get("RAWTRIO_CRASH_ALL") == "1"
    points: list[tuple[int, str]] = []
    for i, kind in enumerate(kinds, start=1):
        if kind == "w" or everything:
            points += [(i, "before"), (i, "after")]
        elif i % 6 == 0:
            points.append((i, "after"))
    return points


async def check_reopened(tmp: Path) -> None:
    db = tmp / "s.db"
    runs_before = (tmp / "runs.txt").read_text() if (tmp / "runs.txt").exists() else ""
    async with (
        SqliteStore(db) as store,
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        open_runtime(store) as runtime,
    ):
        (record,) = await store.list_sessions()
        report = await store.open_for_write(record.id)
        context = await store.load_context(record.id)
        assert check_pairing(context) == [], (tmp, context)
        raw = sqlite3.connect(db)
        outcomes = [r[0] for r in raw.execute("SELECT outcome FROM turns")]
        started = {r[0] for r in raw.execute("SELECT call_id FROM started_calls")}
        raw.close()
        assert None not in outcomes
        for result in report.results:
            expected = (
                ToolStatus.OUTCOME_UNKNOWN if result.call_id in started else ToolStatus.CANCELLED
            )
            assert result.status is expected
        history = await store.events_since(record.id, 0)
        ended = [e.turn_id for e in history if isinstance(e, ev.TurnEnded)]
        assert len(ended) == len(set(ended)) == len(outcomes)
        assert [e.seq for e in history] == list(range(1, len(history) + 1))
        for line in ("one", "two"):
            assert runs_before.splitlines().count(line) <= 1
        session = await runtime.open_session(record.id, options(tmp, server.openai_base_url))
        ended_next = await session.run_turn("and now?")
        assert ended_next.outcome is TurnOutcome.COMPLETED, ended_next.reason
    assert ((tmp / "runs.txt").read_text() if (tmp / "runs.txt").exists() else "") == runs_before


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
async def test_kill_9_at_every_commit_point_leaves_a_valid_session(tmp_path: Path) -> None:
    with trio.fail_after(LIVENESS_S * 4):
        clean = await run_child(tmp_path / "clean", 0, "before")
        assert clean.returncode == 0, clean.stderr.decode()[-2000:]
        kinds = clean.stdout.decode().split()[-1]
        points = kill_points(kinds)
        print(f"{len(kinds)} store operations; killing at {len(points)} points: {points}")
        limiter = trio.CapacityLimiter(2)
        killed: dict[tuple[int, str], int] = {}

        async def one(point: tuple[int, str]) -> None:
            async with limiter:
                done = await run_child(tmp_path / f"k{point[0]}-{point[1]}", *point)
            killed[point] = done.returncode

        async with trio.open_nursery() as nursery:
            for point in points:
                nursery.start_soon(one, point)
        assert all(rc == -signal.SIGKILL for rc in killed.values()), killed
        for k, when in points:
            await check_reopened(tmp_path / f"k{k}-{when}")
