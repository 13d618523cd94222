"""The store's rules without a model: limits said, the cap, retention, symlinks, modes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import trio

from rawtrio.checkpoints.capture import TurnCheckpoints
from rawtrio.checkpoints.restore import CheckpointError, undo
from rawtrio.checkpoints.store import CheckpointStore, drop_sessions_everywhere
from rawtrio.checkpoints.tree import Limits
from tests.checkpoints.helpers import picture


async def bash_turn(cp: TurnCheckpoints, turn: str, command: str, cwd: Path) -> object:
    """One turn of one `bash` call, run as the loop runs it: before, the call, after, end."""
    await cp.before_call(turn, "bash", {"command": command}, read_only=False)
    await trio.run_process(["sh", "-c", command], cwd=cwd)
    await cp.after_call()
    return await cp.end_turn(turn, command, cancelled=False)


async def test_a_file_past_the_per_file_limit_is_said_not_captured(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "big.bin").write_bytes(b"b" * 100)
    (project / "small.txt").write_bytes(b"s\n")
    store = CheckpointStore(tmp_path / "cp", project, Limits(max_file_bytes=50))
    cp = TurnCheckpoints(store, "s1")
    changes = await bash_turn(cp, "t1", "printf x >> big.bin; printf 't\\n' >> small.txt", project)
    assert changes is not None
    cs = changes.change_set  # type: ignore[attr-defined]
    assert [f.path for f in cs.files] == ["small.txt"]
    [missed] = cs.not_captured
    assert missed.path == "big.bin"
    assert "larger than the per-file limit (50 bytes)" in missed.reason
    assert cs.summary() == "1 file changed (+1 \u22120); 1 not captured"
    out = undo(store, "s1")
    assert "big.bin: its content before the turn: larger than" in out.describe("undo")
    assert (project / "small.txt").read_bytes() == b"s\n"


async def test_the_project_cap_drops_the_oldest_change_sets_first(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    store = CheckpointStore(tmp_path / "cp", project, Limits(project_cap_bytes=3000))
    cp = TurnCheckpoints(store, "s1")
    first = await bash_turn(cp, "t1", "head -c 1200 /dev/urandom > a.bin", project)
    assert first is not None
    assert first.cap_notice is None  # type: ignore[attr-defined]
    second = await bash_turn(cp, "t2", "head -c 1200 /dev/urandom > a.bin", project)
    third = await bash_turn(cp, "t3", "head -c 1200 /dev/urandom > a.bin", project)
    assert second is not None
    assert third is not None
    notice = third.cap_notice  # type: ignore[attr-defined]
    assert notice is not None
    # t2's "before" is t1's "after": dropping t1 alone frees nothing, so t2 goes as well.
    assert "cap of 3000 bytes; the 2 oldest change set(s) were dropped" in notice
    assert [c.turn_id for c in store.change_sets("s1")] == ["t3"]
    assert sum(store.objects.all().values()) <= 3000


async def test_retention_takes_a_sessions_change_sets_with_it(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    root = tmp_path / "cp"
    store = CheckpointStore(root, project)
    await bash_turn(TurnCheckpoints(store, "old"), "t1", "echo a > a.txt", project)
    await bash_turn(TurnCheckpoints(store, "kept"), "t1", "echo b > b.txt", project)
    assert drop_sessions_everywhere(root, ["old", "unknown"]) == 1
    assert [c.session_id for c in store.change_sets()] == ["kept"]
    with pytest.raises(CheckpointError, match="nothing to undo"):
        undo(store, "old")


async def test_symlinks_modes_and_new_folders_round_trip(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "target.txt").write_bytes(b"t")
    os.symlink("target.txt", project / "link")
    (project / "exe").write_bytes(b"#!/bin/sh\n")
    os.chmod(project / "exe", 0o755)
    original = picture(project)
    store = CheckpointStore(tmp_path / "cp", project)
    cp = TurnCheckpoints(store, "s")
    command = "rm link && ln -s exe link && chmod 600 exe && mkdir -p a/b/c && : > a/b/c/e"
    await bash_turn(cp, "t", command, project)
    assert undo(store).applied
    assert picture(project) == original


async def test_an_unchanged_project_makes_no_record_and_the_users_git_is_not_read(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    await trio.run_process(["git", "init", "-q"], cwd=project)
    (project / ".git" / "secret-object").write_bytes(b"never copied")
    store = CheckpointStore(tmp_path / "cp", project)
    assert await bash_turn(TurnCheckpoints(store, "s"), "t", "true", project) is None
    stored = {store.objects.get(b) for b in store.objects.all()}
    assert b"never copied" not in stored


async def test_rewind_undoes_every_later_turn_newest_first(tmp_path: Path) -> None:
    from rawtrio.checkpoints.restore import redo, rewind

    project = tmp_path / "p"
    project.mkdir()
    (project / "a.txt").write_bytes(b"0\n")
    original = picture(project)
    store = CheckpointStore(tmp_path / "cp", project)
    cp = TurnCheckpoints(store, "s")
    await bash_turn(cp, "t1", "echo 1 > a.txt", project)
    middle = picture(project)
    await bash_turn(cp, "t2", "echo 2 > a.txt && mkdir d && echo x > d/x", project)
    await bash_turn(cp, "t3", "rm a.txt", project)
    outcomes = rewind(store, "s", 2)
    assert [o.change_set.number for o in outcomes] == [3, 2]
    assert all(o.applied for o in outcomes)
    assert picture(project) == middle
    (project / "a.txt").write_bytes(b"outside\n")
    [refused] = rewind(store, "s", 1)
    assert not refused.applied
    assert (project / "a.txt").read_bytes() == b"outside\n"
    [forced] = rewind(store, "s", 1, force=True)
    assert forced.applied
    assert picture(project) == original
    with pytest.raises(CheckpointError, match="undone already"):
        rewind(store, "s", 1)
    assert redo(store, "s").change_set.number == 1


async def test_an_mcp_tool_is_compared_like_bash_and_numbers_never_repeat(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    store = CheckpointStore(tmp_path / "cp", project, Limits(project_cap_bytes=2500))
    cp = TurnCheckpoints(store, "s")
    for n in (1, 2, 3, 4):
        turn = f"t{n}"
        await cp.before_call(turn, "mcp/files/write", {"path": "ignored"}, read_only=False)
        (project / "m.bin").write_bytes(os.urandom(1000))
        await cp.after_call()
        changes = await cp.end_turn(turn, "mcp", cancelled=False)
        assert changes is not None
        assert changes.change_set.files[0].captured_by == "scan"
    # the cap dropped the oldest; the next number still follows the newest
    assert [c.number for c in store.change_sets("s")] == [4]


async def test_a_cancel_ends_a_long_snapshot_within_a_few_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the tree walk ran to the end of the tree before the turn's cancel took
    effect (the worker thread never looked at it)."""
    from rawtrio.checkpoints import tree
    from rawtrio.checkpoints.objects import ObjectStore

    project = tmp_path / "project"
    project.mkdir()
    for i in range(400):
        (project / f"f{i:03}.txt").write_text(f"file {i}\n")
    read: list[Path] = []
    first = trio.Event()
    token = trio.lowlevel.current_trio_token()
    real = tree.read_version

    def slow_read(path: Path, *args: object) -> object:
        read.append(path)
        if len(read) == 1:
            trio.from_thread.run_sync(first.set, trio_token=token)
        else:
            time.sleep(0.05)  # 400 files: ~20 s for a walk that never looks at the cancel
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(tree, "read_version", slow_read)
    objects = ObjectStore(tmp_path / "objects")

    async def walk() -> None:
        await trio.to_thread.run_sync(
            tree.snapshot, project, objects, Limits(), tree.Budget(1 << 30), {}
        )

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(walk)
            await first.wait()
            nursery.cancel_scope.cancel(reason="the user pressed Ctrl-C")
    assert len(read) <= tree.CANCEL_CHECK_EVERY + 1, len(read)
