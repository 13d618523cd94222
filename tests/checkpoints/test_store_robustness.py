"""The store under crashes and concurrency: temporaries, batched durability, cut restores."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from rawtrio.checkpoints.capture import TurnCheckpoints
from rawtrio.checkpoints.objects import ObjectStore, blob_id
from rawtrio.checkpoints.restore import CheckpointError, redo, rewind, undo
from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.cli.undo import describe_line
from tests.checkpoints.helpers import picture


async def bash_turn(cp: TurnCheckpoints, turn: str, command: str, cwd: Path) -> object:
    await cp.before_call(turn, "bash", {"command": command}, read_only=False)
    await trio.run_process(["sh", "-c", command], cwd=cwd)
    await cp.after_call()
    return await cp.end_turn(turn, command, cancelled=False)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


async def test_garbage_collection_keeps_a_running_writers_temporary(tmp_path: Path) -> None:
    """Two sessions of one project: the cap's garbage collection in one must not remove
    the blob the other is writing (its rename would fail and its snapshot with it)."""
    project = tmp_path / "p"
    project.mkdir()
    store = CheckpointStore(tmp_path / "cp", project)
    await bash_turn(TurnCheckpoints(store, "s1"), "t1", "echo a > a.txt", project)
    folder = store.objects.root / "ab"
    folder.mkdir()
    running = folder / f"tmp-{os.getpid()}-aaaa"  # this process: a writer still running
    running.write_bytes(b"half")
    gone = folder / f"tmp-{dead_pid()}-bbbb"  # a writer that was killed
    gone.write_bytes(b"half")
    store.collect_garbage()
    assert running.exists()
    assert not gone.exists()


async def test_a_killed_record_writers_temporary_is_removed_at_the_next_open(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    root = tmp_path / "cp"
    await bash_turn(
        TurnCheckpoints(CheckpointStore(root, project), "s1"), "t1", "echo a > a", project
    )
    store = CheckpointStore(root, project)
    [folder] = store.changesets.iterdir()
    left = folder / f".tmp-{dead_pid()}-000002-t2.json"
    left.write_text('{"half": ')
    other = folder / f".tmp-{os.getpid()}-000003-t3.json"  # a writer still running
    other.write_text("{")
    assert undo(CheckpointStore(root, project), "s1").applied  # opens the store
    assert not left.exists()
    assert other.exists()


def test_a_batch_names_its_blobs_only_when_they_are_durable(tmp_path: Path) -> None:
    objects = ObjectStore(tmp_path / "objects")
    with objects.batch():
        blob = objects.put(b"content")
        assert objects.put(b"content") == blob
        assert not objects.path(blob).exists()  # not under its name before the batch ends
        assert objects.get(blob) == b"content"  # but readable from its temporary
        assert objects.has(blob)
    assert objects.path(blob).read_bytes() == b"content"
    assert objects.temporaries() == []

    def cut_batch() -> None:
        with objects.batch():
            objects.put(b"never named")
            assert objects.temporaries() != []
            raise RuntimeError("cut")

    with pytest.raises(RuntimeError, match="cut"):
        cut_batch()
    assert not objects.has(blob_id(b"never named"))
    assert objects.temporaries() == []


KILL_MIDWAY = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from rawtrio.checkpoints import restore
    from rawtrio.checkpoints.store import CheckpointStore

    real, n = restore._write, [0]

    def write(*args):
        n[0] += 1
        if n[0] == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # after one file was put back
        real(*args)

    restore._write = write
    store = CheckpointStore(Path(sys.argv[1]), Path(sys.argv[2]))
    getattr(restore, sys.argv[3])(store, "s1")
    """
)


def kill_midway(root: Path, project: Path, action: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILL_MIDWAY, str(root), str(project), action],
        cwd=Path(__file__).parents[2],
        check=False,
    )
    assert done.returncode == -signal.SIGKILL


@pytest.mark.parametrize(("cut", "then"), [("undo", "undo"), ("redo", "redo"), ("undo", "redo")])
async def test_an_undo_or_redo_killed_midway_is_completed_by_the_next_one(
    tmp_path: Path, cut: str, then: str
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (project / name).write_text(f"{name} before\n")
    original = picture(project)
    root = tmp_path / "cp"
    store = CheckpointStore(root, project)
    command = "for f in a b c; do echo after > $f.txt; done; echo new > d.txt"
    await bash_turn(TurnCheckpoints(store, "s1"), "t1", command, project)
    changed = picture(project)
    if cut == "redo":
        assert undo(store, "s1").applied
    kill_midway(root, project, cut)
    [record] = CheckpointStore(root, project).changesets.glob("s1/*.json")
    assert json.loads(record.read_text())["pending"] == cut  # it says the tree is part way
    assert picture(project) not in (original, changed)
    out = (undo if then == "undo" else redo)(CheckpointStore(root, project), "s1")
    assert out.applied
    assert out.conflicts == ()
    assert out.resumed == cut
    assert f"completed an interrupted {cut} of checkpoint 1" in out.describe(then)
    assert picture(project) == (original if then == "undo" else changed)  # no temporaries
    [cs] = CheckpointStore(root, project).change_sets("s1")
    assert cs.pending is None
    assert cs.state == ("undone" if then == "undo" else "applied")


@pytest.mark.parametrize("cut", ["undo", "redo"])
async def test_a_rewind_finishes_an_undo_or_redo_killed_midway_first(
    tmp_path: Path, cut: str
) -> None:
    """A rewind over a cut undo or redo completes it (as the next undo or redo would)
    instead of showing its half-restored files as conflicts."""
    project = tmp_path / "p"
    project.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (project / name).write_text(f"{name} before\n")
    original = picture(project)
    root = tmp_path / "cp"
    store = CheckpointStore(root, project)
    command = "for f in a b c; do echo after > $f.txt; done; echo new > d.txt"
    await bash_turn(TurnCheckpoints(store, "s1"), "t1", command, project)
    if cut == "redo":
        assert undo(store, "s1").applied
    kill_midway(root, project, cut)
    assert picture(project) != original
    [listed] = CheckpointStore(root, project).change_sets("s1")  # listings say so
    assert f"{cut} interrupted: the next undo or redo finishes it" in describe_line(listed)
    if cut == "undo":  # finishing the undo put everything back: nothing is left to do
        with pytest.raises(CheckpointError, match="undone already"):
            rewind(CheckpointStore(root, project), "s1", 1)
    else:
        outcomes = rewind(CheckpointStore(root, project), "s1", 1)
        assert [(o.applied, o.conflicts) for o in outcomes] == [(True, ())]
    assert picture(project) == original
    [cs] = CheckpointStore(root, project).change_sets("s1")
    assert (cs.pending, cs.state) == (None, "undone")


def test_a_store_removed_under_a_running_session_is_made_again(tmp_path: Path) -> None:
    objects = ObjectStore(tmp_path / "objects")
    first = objects.put(b"one")
    shutil.rmtree(tmp_path / "objects")
    with objects.batch():
        objects.put(b"one")
        again = objects.put(b"two")
    assert objects.get(first) == b"one"
    assert objects.get(again) == b"two"
