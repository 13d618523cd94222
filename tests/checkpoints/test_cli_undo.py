"""`rawtrio undo` / `rawtrio redo` as a user runs them: a real process in the project."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rawtrio.checkpoints.store import CheckpointStore
from tests.checkpoints.helpers import make_project, picture, scenario_all_tools
from tests.conftest import session_on


def rawtrio(project: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAWTRIO_STATE_DIR": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "rawtrio", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def changed_project(tmp_path: Path) -> tuple[Path, Path, str]:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    async with session_on(
        scenario_all_tools(), "anthropic", project, checkpoint_dir=state / "checkpoints"
    ) as (session, _s, _):
        await session.run_turn("change things")
    return project, state, session.id


async def test_undo_then_redo_from_the_command_line(tmp_path: Path) -> None:
    project, state, sid = await changed_project(tmp_path)
    after = picture(project)
    listed = rawtrio(project, state, "undo", "--list")
    assert listed.returncode == 0, listed.stderr
    assert f"{sid[:8]}  #1  8 files changed" in listed.stdout
    done = rawtrio(project, state, "undo")
    assert done.returncode == 0, done.stderr
    assert "8 file(s) put back" in done.stdout
    assert "fresh/deep/n.txt" in done.stdout
    assert not (project / "fresh").exists()
    assert (project / "gone.txt").read_bytes() == b"\x00\x01binary\xff"
    again = rawtrio(project, state, "redo", "--session", sid[:8])
    assert again.returncode == 0, again.stderr
    assert picture(project) == after
    nothing = rawtrio(project, state, "redo")
    assert nothing.returncode == 1
    assert "nothing to redo" in nothing.stderr


async def test_a_conflict_is_refused_with_exit_6_until_forced(tmp_path: Path) -> None:
    project, state, sid = await changed_project(tmp_path)
    (project / "sed.txt").write_bytes(b"mine now\n")
    (project / "made" / "by" / "write.txt").unlink()
    refused = rawtrio(project, state, "undo", "--session", sid, "--turn", "1")
    assert refused.returncode == 6
    assert "sed.txt: expected" in refused.stderr
    assert "made/by/write.txt: expected 8 bytes, mode 644, found no file" in refused.stderr
    assert (project / "sed.txt").read_bytes() == b"mine now\n"
    assert CheckpointStore(state / "checkpoints", project).change_sets()[0].state == "applied"
    forced = rawtrio(project, state, "undo", "--force")
    assert forced.returncode == 0, forced.stderr
    assert (project / "sed.txt").read_bytes() == b"x one\nx two\n"


def test_bad_arguments_are_named_and_change_nothing(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    before = picture(project)
    turn_alone = rawtrio(project, state, "undo", "--turn", "2")
    assert turn_alone.returncode == 2
    assert "--turn needs --session" in turn_alone.stderr
    unknown = rawtrio(project, state, "undo", "--session", "nosuch")
    assert unknown.returncode == 2
    assert "no checkpoints of a session 'nosuch'" in unknown.stderr
    empty = rawtrio(project, state, "undo")
    assert empty.returncode == 1
    assert "nothing to undo" in empty.stderr
    assert picture(project) == before
    assert not (state / "checkpoints").exists()
