"""The crash suite with `task` children: a SIGKILL while a child runs its tool, then the
parent's reopen repairs the parent and the child (docs/contracts.md, The `task` tool:
storage link; docs/stress.md, the crash suite)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio

from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import ToolResult
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from stress.crash import CrashRun, KillPlan, phase_of, run_one
from stress.crash_checks import lines_of, read_children, read_snapshot
from stress.crash_child import SCRIPT

#: Liveness only: one child process (imports included) and a reopen.
LIVENESS_S = 300
#: The line a `task` child's session writes once its `bash` call's start is recorded.
CHILD_CALL_STARTED = r"^child \S+ started "


@pytest.mark.skipif(sys.platform != "linux", reason="SIGKILL, /proc")
async def test_a_kill_while_a_child_runs_its_tool_is_repaired_in_parent_and_child(
    tmp_path: Path,
) -> None:
    """Killed right after the first child recorded its `bash` call's start: reopening the
    parent gives the parent's `task` call and the child's `bash` call `outcome_unknown`,
    marks both turns `interrupted`, re-runs nothing, and leaves no process running — the
    child is repaired though only the parent is opened."""
    plan = KillPlan("after a child's call started", 0.0, after_line=CHILD_CALL_STARTED)
    run = CrashRun(1, "anthropic", plan, "subagents")
    async with open_fake_model_server(Scenario.from_dict(SCRIPT)) as server:
        with trio.fail_after(LIVENESS_S):
            log = await run_one(server, tmp_path, run, "anthropic")
    assert log is not None
    assert log.killed, log.stderr
    assert run.violations == [], run.violations
    assert run.survivors == 0
    assert log.session_id is not None
    db = tmp_path / "sessions.db"
    children = read_children(db, log.session_id)
    assert children, "the child session was not stored"
    first = children[0]
    # Its `bash` call's start was reported before the kill: a fact, so it must be repaired.
    started = [line.split()[1] for line in lines_of(log.texts, first) if line.startswith("started")]
    assert len(started) == 1
    child = read_snapshot(db, first)
    assert set(child.turns.values()) == {TurnOutcome.INTERRUPTED.value}
    [child_result] = [m for m in child.messages() if isinstance(m, ToolResult)]
    assert (child_result.call_id, child_result.status) == (started[0], ToolStatus.OUTCOME_UNKNOWN)
    parent = read_snapshot(db, log.session_id)  # its cut turn, then the follow-up
    assert sorted(str(o) for o in parent.turns.values()) == ["completed", "interrupted"]
    results = [m for m in parent.messages() if isinstance(m, ToolResult)]
    assert results[0].name == "task"
    assert results[0].status is ToolStatus.OUTCOME_UNKNOWN
    # The first child's command ran at most once (the kill may come before it began).
    runs = tmp_path / "work" / "runs.txt"
    assert (runs.read_text().splitlines() if runs.exists() else []) in ([], ["child-a"])


def test_phase_of_a_line_about_a_child_is_the_childs() -> None:
    lines = ["ready p1", "event 7 tool_call_started", "child c1 begin mark_call_started"]
    assert phase_of(lines) == "child writing (mark_call_started)"
    # The parent's copy of each child event is passed over.
    lines += ["child c1 event 4 tool_call_started", "event 8 subagent_event"]
    assert phase_of(lines) == "child tool running"
    # A child's approval is relayed on the parent: still the child's wait.
    asked = ["child c1 event 5 permission_requested", "event 9 permission_requested"]
    assert phase_of([*lines, *asked, "event 10 subagent_event"]) == "child permission wait"
    assert phase_of(["ready p1", "event 3 permission_requested"]) == "permission wait"
    assert phase_of([*lines, "event 9 subagent_ended"]) == "child ended"


def test_lines_of_a_session() -> None:
    rows = json.dumps(["{}"])
    lines = ["ready p1", f"committed {rows}", f"child c1 committed {rows}", "child c2 begun t2"]
    assert lines_of(lines, None) == ["ready p1", f"committed {rows}"]
    assert lines_of(lines, "c1") == [f"committed {rows}"]
    assert lines_of(lines, "c2") == ["begun t2"]
