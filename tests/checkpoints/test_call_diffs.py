"""What one `bash` call changed reaches its result's details (`file_changes`), and a turn's
change set reads back as diffs (rawtrio.checkpoints.diff)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trio

from rawtrio import events as ev
from rawtrio.checkpoints import diff
from rawtrio.checkpoints.capture import TurnCheckpoints
from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.contracts import TurnOutcome
from rawtrio.frozen import thaw
from rawtrio.messages import ProviderKind
from rawtrio.testing.fake_model import Scenario
from tests.checkpoints.helpers import make_project, scenario_all_tools
from tests.conftest import session_on
from tests.headless.support import Isolation, fake_model_in_thread, run_rawtrio


async def finished_calls(session: Any, text: str) -> list[ev.ToolCallFinished]:
    calls: list[ev.ToolCallFinished] = []
    with session.subscribe() as sub:
        turn_id = await session.submit(text)
        async for event in sub:
            if isinstance(event, ev.ToolCallFinished):
                calls.append(event)
            if isinstance(event, ev.TurnEnded):
                break
    ended = await session.wait_turn(turn_id)
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    return calls


async def test_a_bash_calls_result_details_say_each_file_it_changed(
    wire: ProviderKind, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "p")
    state = tmp_path / "state" / "checkpoints"
    async with session_on(scenario_all_tools(), wire, project, checkpoint_dir=state) as (
        session,
        _server,
        _,
    ):
        calls = await finished_calls(session, "change things")
    by_name = {c.name: thaw(c.details) or {} for c in calls}
    # The file tools say their changes in their arguments (the ACP diff comes from those).
    assert "file_changes" not in by_name["write_file"]
    assert "file_changes" not in by_name["edit_file"]
    entries = {e["path"]: e for e in by_name["bash"]["file_changes"]}
    assert set(entries) == {
        "sed.txt",
        "move.txt",
        "moved.txt",
        "gone.txt",
        "script.sh",
        "fresh/deep/n.txt",
    }
    assert entries["sed.txt"] == {
        "path": "sed.txt",
        "kind": "modified",
        "old_mode": 0o644 & ~_umask(),
        "new_mode": 0o644 & ~_umask(),
        "old_text": "x one\nx two\n",
        "new_text": "y one\ny two\n",
    }
    assert entries["fresh/deep/n.txt"]["kind"] == "created"
    assert entries["fresh/deep/n.txt"]["old_text"] is None
    assert entries["fresh/deep/n.txt"]["new_text"] == "new\n"
    assert entries["moved.txt"]["new_text"] == "moved content\n"
    assert entries["move.txt"]["kind"] == "deleted"
    assert entries["move.txt"]["note"] == "deleted (14 bytes)"
    assert "new_text" not in entries["move.txt"]
    assert entries["gone.txt"]["kind"] == "deleted"
    assert entries["script.sh"]["kind"] == "mode"
    assert entries["script.sh"]["note"] == "mode 600 \u2192 755"
    assert "file_changes_left_out" not in by_name["bash"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


async def one_call(project: Path, state: Path, change: Any) -> dict[str, Any]:
    """Snapshot `project` as before a bash call, run `change()`, compare: the details."""
    store = CheckpointStore(state, project)
    checkpoints = TurnCheckpoints(store, "s1")
    await checkpoints.before_call("t1", "bash", {"command": "x"}, read_only=False)
    change()
    return await checkpoints.after_call()


async def test_a_binary_file_is_said_not_diffed(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "text.txt").write_text("a\n")

    def change() -> None:
        (project / "data.bin").write_bytes(b"\x00\x01\x02binary")
        (project / "text.txt").write_text("a\nb\n")

    details = await one_call(project, tmp_path / "state", change)
    binary, text = details["file_changes"]
    assert binary == {
        "path": "data.bin",
        "kind": "created",
        "old_mode": None,
        "new_mode": binary["new_mode"],
        "note": "binary file (9 bytes)",
    }
    assert (text["old_text"], text["new_text"]) == ("a\n", "a\nb\n")


async def test_past_the_file_cap_the_rest_are_counted(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    count = diff.CALL_MAX_FILES + 3

    def change() -> None:
        for n in range(count):
            (project / f"f{n:02d}.txt").write_text(f"{n}\n")

    details = await one_call(project, tmp_path / "state", change)
    assert [e["path"] for e in details["file_changes"]] == [
        f"f{n:02d}.txt" for n in range(diff.CALL_MAX_FILES)
    ]
    assert details["file_changes_left_out"] == 3


async def test_a_large_file_and_a_spent_budget_are_said(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    size = diff.CALL_TEXT_LIMIT - 10  # each fits; together they pass the call's budget
    fit = diff.CALL_TEXT_BUDGET // size

    def change() -> None:
        (project / "big.txt").write_text("x" * (diff.CALL_TEXT_LIMIT + 1))
        for n in range(fit + 1):
            (project / f"m{n}.txt").write_text("y" * size)

    details = await one_call(project, tmp_path / "state", change)
    entries = {e["path"]: e for e in details["file_changes"]}
    assert entries["big.txt"]["note"] == f"too large to show ({diff.CALL_TEXT_LIMIT + 1} bytes)"
    shown = [p for p, e in entries.items() if "new_text" in e]
    assert shown == [f"m{n}.txt" for n in range(fit)]
    assert entries[f"m{fit}.txt"]["note"] == (
        "not shown: this call's diff budget was spent on other files"
    )


async def test_a_call_that_changed_nothing_adds_nothing(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "same.txt").write_text("same\n")

    def touch() -> None:  # a new mtime, the same content
        os.utime(project / "same.txt", (1, 1))

    assert await one_call(project, tmp_path / "state", touch) == {}


async def test_a_change_set_reads_back_as_diffs(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    store = CheckpointStore(tmp_path / "state", project)
    checkpoints = TurnCheckpoints(store, "s1")
    await checkpoints.before_call("t1", "bash", {"command": "x"}, read_only=False)

    def change() -> None:
        (project / "edit.txt").write_bytes(b"alpha\nBETA\ngamma")  # last newline gone
        (project / "gone.txt").unlink()
        os.chmod(project / "script.sh", 0o755)
        (project / "new.txt").write_bytes(b"one\ttab\n")

    await trio.to_thread.run_sync(change)
    await checkpoints.after_call()
    changes = await checkpoints.end_turn("t1", "change", cancelled=False)
    assert changes is not None
    diffs = {d.path: d for d in diff.diff_change_set(store.objects, changes.change_set)}
    edit = diffs["edit.txt"]
    assert edit.header() == "modified edit.txt (+2 \u22122)"
    assert edit.lines == (
        "@@ -1,3 +1,3 @@",
        " alpha",
        "-beta",
        "-gamma",
        "+BETA",
        "+gamma",
        "\\ No newline at end of file",
    )
    assert diffs["gone.txt"].kind == "deleted"
    assert diffs["gone.txt"].lines == ()
    assert diffs["gone.txt"].notes[-1] == "binary file (9 bytes)"
    assert diffs["script.sh"].kind == "mode"
    assert diffs["script.sh"].header() == "mode script.sh"
    assert diffs["script.sh"].notes == ("mode 600 \u2192 755",)
    new = diffs["new.txt"]
    assert new.kind == "created"
    assert new.lines == ("@@ -0,0 +1 @@", "+one\ttab")
    assert new.notes[0].startswith("new file, mode ")


async def test_a_side_the_size_cap_dropped_is_said(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.txt").write_text("before\n")
    store = CheckpointStore(tmp_path / "state", project)
    checkpoints = TurnCheckpoints(store, "s1")
    await checkpoints.before_call("t1", "bash", {"command": "x"}, read_only=False)
    (project / "a.txt").write_text("after\n")
    await checkpoints.after_call()
    changes = await checkpoints.end_turn("t1", "change", cancelled=False)
    assert changes is not None
    [f] = changes.change_set.files
    assert f.before is not None
    store.objects.remove(f.before.blob)
    [d] = diff.diff_change_set(store.objects, changes.change_set)
    assert d.lines == ()
    assert d.notes == ("its content is no longer kept (the store's size cap dropped it)",)


def test_headless_events_carry_a_bash_calls_file_changes(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    iso.env()
    make_project(iso.cwd)
    with fake_model_in_thread(Scenario.from_dict(scenario_all_tools())) as server:
        done = run_rawtrio(
            iso,
            "-p",
            "change things",
            "--base-url",
            server.base_url,
            "--model",
            "test-model",
            "--output-format",
            "events",
            env={"ANTHROPIC_API_KEY": "test-key"},
        )
    assert done.returncode == 0, done
    [bash] = [
        e for e in done.json_lines() if e["type"] == "tool_call_finished" and e["name"] == "bash"
    ]
    entries = {e["path"]: e for e in bash["details"]["file_changes"]}
    assert entries["sed.txt"]["old_text"] == "x one\nx two\n"
    assert entries["sed.txt"]["new_text"] == "y one\ny two\n"
    assert entries["gone.txt"]["note"] == "deleted (9 bytes)"
