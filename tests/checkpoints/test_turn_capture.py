"""Capture end to end: real sessions on the fake model server, real tools, then undo/redo."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio import events as ev
from rawtrio.checkpoints.restore import CheckpointError, redo, undo
from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import ProviderKind
from tests.checkpoints.helpers import call, make_project, picture, scenario_all_tools
from tests.conftest import session_on


async def notices(session: Any, text: str) -> tuple[ev.TurnEnded, list[str]]:
    seen: list[str] = []
    with session.subscribe() as sub:
        turn_id = await session.submit(text)
        async for event in sub:
            if isinstance(event, ev.Notice):
                seen.append(event.text)
            if isinstance(event, ev.TurnEnded):
                break
    return await session.wait_turn(turn_id), seen


async def test_a_turn_of_every_tool_is_undone_and_redone_byte_for_byte(
    wire: ProviderKind, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state" / "checkpoints"
    original = picture(project)
    async with session_on(scenario_all_tools(), wire, project, checkpoint_dir=state) as (
        session,
        _server,
        _,
    ):
        ended, said = await notices(session, "change things")
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        changed = picture(project)
        store = CheckpointStore(state, project)
        [cs] = store.change_sets(session.id)
    by_path = {f.path: f for f in cs.files}
    assert set(by_path) == {
        "made/by/write.txt",
        "edit.txt",
        "sed.txt",
        "move.txt",
        "moved.txt",
        "gone.txt",
        "script.sh",
        "fresh/deep/n.txt",
    }
    assert by_path["made/by/write.txt"].captured_by == "tool"
    assert by_path["edit.txt"].captured_by == "tool"
    assert by_path["sed.txt"].captured_by == "scan"
    assert by_path["gone.txt"].after is None
    assert by_path["moved.txt"].before is None
    assert "fresh" in cs.new_dirs
    assert "made" in cs.new_dirs
    assert cs.not_captured == ()
    assert any(t.startswith(f"{cs.summary()} \u2014 checkpoint 1") for t in said)
    assert cs.summary() == "8 files changed (+6 \u22124)"

    done = await trio.to_thread.run_sync(undo, store, session.id, None)
    assert done.applied
    assert picture(project) == original
    again = await trio.to_thread.run_sync(redo, store, session.id, None)
    assert again.applied
    assert picture(project) == changed
    with pytest.raises(CheckpointError, match="nothing to redo"):
        redo(store, session.id)


async def test_an_outside_change_is_a_conflict_and_nothing_is_written(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    async with session_on(scenario_all_tools(), "anthropic", project, checkpoint_dir=state) as (
        session,
        _s,
        _,
    ):
        await session.run_turn("change things")
    (project / "edit.txt").write_bytes(b"changed by the user\n")
    touched = picture(project)
    store = CheckpointStore(state, project)
    refused = undo(store)
    assert not refused.applied
    assert [c.path for c in refused.conflicts] == ["edit.txt"]
    assert "--force" in refused.describe("undo")
    assert picture(project) == touched  # nothing written
    assert store.change_sets()[0].state == "applied"
    forced = undo(store, force=True)
    assert forced.applied
    assert (project / "edit.txt").read_bytes() == b"alpha\nbeta\ngamma\n"


async def test_a_cancelled_turn_records_what_it_changed_up_to_the_cut(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    command = "printf 'cut\\n' > before-cut.txt && rm gone.txt && echo started && sleep 60"
    scenario = {
        "rules": [
            {"match": "long", "replies": [{"tool_calls": [call("bash", command=command)]}]},
            {"match": "*", "replies": [{"text": "ok"}]},
        ]
    }
    original = picture(project)
    async with session_on(scenario, "anthropic", project, checkpoint_dir=state) as (
        session,
        _s,
        _,
    ):
        with session.subscribe() as sub:
            turn_id = await session.submit("long")
            async for event in sub:
                if isinstance(event, ev.ToolOutputDelta) and "started" in event.text:
                    session.cancel("test cancel")
                    break
        ended = await session.wait_turn(turn_id)
    assert ended.outcome is TurnOutcome.CANCELLED
    store = CheckpointStore(state, project)
    [cs] = store.change_sets()
    assert cs.cancelled
    assert sorted(f.path for f in cs.files) == ["before-cut.txt", "gone.txt"]
    assert undo(store).applied
    assert picture(project) == original


def git(project: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(
        ["git", *args], cwd=project, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


async def test_the_users_git_state_is_left_untouched(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "base")
    (project / "edit.txt").write_bytes(b"alpha\nstashed\ngamma\n")
    git(project, "stash", "-q")
    (project / "sed.txt").write_bytes(b"x one\nx two\nx three\n")
    git(project, "add", "sed.txt")
    before = (
        git(project, "status", "--porcelain=v2", "--branch"),
        git(project, "stash", "list"),
        git(project, "branch", "-a"),
        git(project, "ls-files", "--stage"),  # the index's entries (git refreshes stat data)
        git(project, "for-each-ref"),
        git(project, "rev-parse", "HEAD"),
    )
    original = picture(project)
    dot_git = {p: p.read_bytes() for p in (project / ".git").rglob("*") if p.is_file()}
    state = tmp_path / "state"
    async with session_on(scenario_all_tools(), "anthropic", project, checkpoint_dir=state) as (
        session,
        _s,
        _,
    ):
        await session.run_turn("change things")
    store = CheckpointStore(state, project)
    index = os.stat(project / ".git" / "index")
    assert undo(store).applied
    assert redo(store).applied
    assert undo(store).applied
    after_index = os.stat(project / ".git" / "index")
    assert (after_index.st_mtime_ns, after_index.st_ino) == (index.st_mtime_ns, index.st_ino)
    assert picture(project) == original
    # Not one byte of .git was written by the turn, undo or redo (git itself not run yet).
    assert {p: p.read_bytes() for p in (project / ".git").rglob("*") if p.is_file()} == dot_git
    after = (
        git(project, "status", "--porcelain=v2", "--branch"),
        git(project, "stash", "list"),
        git(project, "branch", "-a"),
        git(project, "ls-files", "--stage"),  # the index's entries (git refreshes stat data)
        git(project, "for-each-ref"),
        git(project, "rev-parse", "HEAD"),
    )
    assert after == before


async def test_a_turn_that_changes_nothing_records_no_change_set(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    scenario = {
        "rules": [
            {
                "match": "look",
                "replies": [
                    {"tool_calls": [call("bash", command="cat edit.txt")]},
                    {"text": "seen"},
                ],
            }
        ]
    }
    async with session_on(scenario, "anthropic", project, checkpoint_dir=state) as (s, _v, _):
        await s.run_turn("look")
    assert CheckpointStore(state, project).change_sets() == []


async def test_deleting_a_session_removes_its_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(state))
    root = state / "checkpoints"
    async with session_on(scenario_all_tools(), "anthropic", project, checkpoint_dir=root) as (
        session,
        _s,
        runtime,
    ):
        await session.run_turn("change things")
        store = CheckpointStore(root, project)
        assert len(store.change_sets(session.id)) == 1
        await runtime.delete_session(session.id)
    assert store.change_sets() == []
    with pytest.raises(CheckpointError, match="nothing to undo"):
        undo(store)
