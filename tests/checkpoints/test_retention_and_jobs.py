"""Retention by the sessions' expiry, and background jobs' changes (captured during the
turn that started them; said, never silently skipped, after it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from rawtrio.checkpoints.capture import TurnCheckpoints
from rawtrio.checkpoints.restore import undo
from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.runtime.runtime import open_runtime
from rawtrio.store.memory import MemoryStore
from rawtrio.tools.background import open_background_jobs
from rawtrio.tools.settings import ToolSettings
from tests.checkpoints.helpers import call, picture
from tests.conftest import session_on


async def bash_turn(cp: TurnCheckpoints, turn: str, command: str, cwd: Path) -> None:
    await cp.before_call(turn, "bash", {"command": command}, read_only=False)
    await trio.run_process(["sh", "-c", command], cwd=cwd)
    await cp.after_call()
    await cp.end_turn(turn, command, cancelled=False)


async def test_a_session_expired_by_retention_days_takes_its_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(state))
    project = tmp_path / "p"
    project.mkdir()
    store = CheckpointStore(state / "checkpoints", project)
    await bash_turn(TurnCheckpoints(store, "old"), "t1", "echo a > a.txt", project)
    await bash_turn(TurnCheckpoints(store, "recent"), "t1", "echo b > b.txt", project)
    sessions = MemoryStore()
    real_time = time.time
    for sid, age_days in (("old", 30), ("recent", 0)):
        monkeypatch.setattr(time, "time", lambda age=age_days: real_time() - age * 86400)
        await sessions.create_session(
            session_id=sid, cwd=str(project), system_prompt="", provider="p", model="m", title=sid
        )
        await sessions.close_session(sid)
    monkeypatch.setattr(time, "time", real_time)
    async with open_runtime(sessions, retention_days=7):
        with trio.fail_after(20):
            while store.change_sets("old"):  # noqa: ASYNC110 (the runtime's own task)
                await trio.sleep(0.05)
    assert [c.session_id for c in store.change_sets()] == ["recent"]


async def test_a_background_job_is_captured_during_its_turn_and_named_after_it(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "log.txt").write_text("start\n")
    original = picture(project)
    # The job writes one file at once, another after its call returned, then keeps
    # running past the turn's end; the turn's last call waits for the second file.
    job = "echo one >> log.txt; sleep 0.5; echo two > later.txt; sleep 30"
    wait = "while [ ! -e later.txt ]; do sleep 0.05; done; echo seen"
    scenario = {
        "rules": [
            {
                "match": "start the job",
                "replies": [
                    {"tool_calls": [call("bash", command=job, background=True)]},
                    {"tool_calls": [call("read_file", path="log.txt")]},
                    {"tool_calls": [call("bash", command=wait)]},
                    {"text": "started"},
                ],
            }
        ]
    }
    state = tmp_path / "state"
    async with session_on(scenario, "anthropic", project, checkpoint_dir=state) as (s, _v, _r):
        with s.subscribe() as sub:
            turn_id = await s.submit("start the job")
            notices = []
            async for event in sub:
                if type(event).__name__ == "Notice":
                    notices.append(event.text)  # type: ignore[attr-defined]
                if type(event).__name__ == "TurnEnded":
                    break
        await s.wait_turn(turn_id)
        [cs] = CheckpointStore(state, project).change_sets(s.id)
        assert {f.path for f in cs.files} == {"log.txt", "later.txt"}
        [missed] = cs.not_captured
        assert missed.path == "*"
        assert "background job(s) may still be changing files (job-1:" in missed.reason
        assert "after this turn ended is not captured" in missed.reason
        assert any("not captured: * (background job(s)" in n for n in notices)
        await s.jobs.stop(s.jobs.get("job-1"))  # type: ignore[union-attr, arg-type]
    out = undo(CheckpointStore(state, project), s.id)
    assert out.applied
    assert picture(project) == original


async def test_jobs_of_earlier_turns_are_named_while_they_run_and_no_longer_after(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    store = CheckpointStore(tmp_path / "cp", project)
    cp = TurnCheckpoints(store, "s")
    settings = ToolSettings(sigterm_grace_s=0.2)
    async with open_background_jobs("s", settings) as jobs:
        job = await jobs.start(["sh", "-c", "sleep 30"], command="sleep 30", cwd=project)
        cp.jobs = lambda: jobs
        await bash_turn(cp, "t1", "echo a > a.txt", project)
        await bash_turn(cp, "t2", "true", project)  # nothing changed: nothing recorded
        await jobs.stop(job)
        await bash_turn(cp, "t3", "echo b > b.txt", project)
    first, last = store.change_sets("s")
    assert (first.turn_id, last.turn_id) == ("t1", "t3")
    [note] = first.not_captured
    assert note.reason.startswith("background job(s) may still be changing files (job-1: `sleep")
    assert last.not_captured == ()
