"""Every bound of a tree comparison is said in the change set, never silently skipped."""

from __future__ import annotations

from pathlib import Path

import trio

from rawtrio.checkpoints.capture import TurnCheckpoints
from rawtrio.checkpoints.model import ChangeSet
from rawtrio.checkpoints.restore import undo
from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.checkpoints.tree import Limits


async def bash_turn(store: CheckpointStore, command: str, cwd: Path) -> ChangeSet:
    cp = TurnCheckpoints(store, "s")
    await cp.before_call("t", "bash", {"command": command}, read_only=False)
    await trio.run_process(["sh", "-c", command], cwd=cwd)
    await cp.after_call()
    changes = await cp.end_turn("t", command, cancelled=False)
    assert changes is not None
    return changes.change_set


async def test_a_tree_past_the_file_bound_says_changes_past_it_were_not_compared(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    for i in range(10):
        (project / f"f{i}.txt").write_text(f"{i}\n")
    store = CheckpointStore(tmp_path / "cp", project, Limits(max_files=4))
    cs = await bash_turn(store, "for i in 0 1 2 3 4 5 6 7 8 9; do echo x >> f$i.txt; done", project)
    [missed] = cs.not_captured
    assert missed.path == "*"
    assert "more than 4 files: changes past that many were not compared" in missed.reason
    assert len(cs.files) <= 4


async def test_the_turns_budget_spent_is_said_and_binary_content_round_trips(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    blob = bytes(range(256)) * 4  # binary, 1 kB
    (project / "a.bin").write_bytes(blob)
    (project / "b.bin").write_bytes(blob[::-1])
    store = CheckpointStore(tmp_path / "cp", project, Limits(max_turn_bytes=1500))
    cs = await bash_turn(store, "printf x >> a.bin; printf y >> b.bin", project)
    assert [f.path for f in cs.files] == ["a.bin"]  # walked first, within the budget
    assert (cs.files[0].added, cs.files[0].removed) == (0, 0)  # binary: no line counts
    [missed] = cs.not_captured
    assert missed.path == "b.bin"
    assert "the turn's snapshot budget (1500 bytes) was spent" in missed.reason
    out = undo(store, "s")
    assert (project / "a.bin").read_bytes() == blob
    assert "not captured, so not restored:\n  b.bin: its content before the turn" in (
        out.describe("undo")
    )


async def test_a_state_directory_inside_the_project_is_never_captured(tmp_path: Path) -> None:
    """rawtrio run in the home folder (or a state directory inside the project): its own
    session store and checkpoints are no part of a turn's changes, and an undo never puts
    an older session store back."""
    project = tmp_path / "home"
    state = project / ".local" / "state" / "rawtrio"
    state.mkdir(parents=True)
    (state / "sessions.db").write_text("v1\n")
    (project / "a.txt").write_text("before\n")
    store = CheckpointStore(state / "checkpoints", project)
    # The call changes a file while rawtrio writes its own store.
    command = "echo after > a.txt; echo v2 > .local/state/rawtrio/sessions.db"
    cs = await bash_turn(store, command, project)
    assert [f.path for f in cs.files] == ["a.txt"]
    assert undo(store, "s").applied
    assert (project / "a.txt").read_text() == "before\n"
    assert (state / "sessions.db").read_text() == "v2\n"
