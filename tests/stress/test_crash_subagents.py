"""The crash suite with `task` children: a SIGKILL while a child runs its tool, then the
parent's reopen repairs the parent and the child (docs/contracts.md, The `task` tool:
storage link; docs/stress.md, the crash suite)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
import trio

from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import AssistantMessage, Message, TextPart, ToolCall, ToolResult, UserMessage
from rawtrio.store import codec
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from stress.crash import CrashRun, KillPlan, phase_of, run_one
from stress.crash_checks import (
    CrashObservation,
    DbSnapshot,
    check_crash,
    check_runs_owned,
    lines_of,
    read_children,
    read_snapshot,
)
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


def _family(started: frozenset[str]) -> list[CrashObservation]:
    """A parent whose `task` call was cut, and its child whose `bash` call (tag `child-a`)
    had its start recorded or not."""
    bash = ToolCall.parse("b1", "bash", '{"command": "echo child-a >> runs.txt; sleep 0.1"}')
    task = ToolCall.parse("t1", "task", '{"description": "d", "prompt": "p"}')
    parent: list[Message] = [UserMessage("go"), AssistantMessage((TextPart("x"), task))]
    child: list[Message] = [UserMessage("p"), AssistantMessage((TextPart("y"), bash))]

    def observe(messages: list[Message], calls: frozenset[str]) -> CrashObservation:
        snapshot = DbSnapshot(tuple(codec.message_to_row(m) for m in messages), started=calls)
        return CrashObservation(
            lines=[],
            before=snapshot,
            reopened=snapshot,
            after=snapshot,
            context=messages,
            runs_before=[],
            runs_after=[],
            followup_outcome=None,
            followup_statuses=[],
            followup_user_texts=[],
            context_after_followup=messages,
        )

    return [observe(parent, frozenset({"t1"})), observe(child, started)]


def test_the_runs_file_is_checked_against_every_session_of_the_family() -> None:
    assert check_runs_owned(_family(frozenset({"b1"})), ["child-a"], ["child-a"]) == []
    unmarked = check_runs_owned(_family(frozenset()), ["child-a"], ["child-a"])
    assert [v.invariant for v in unmarked] == ["I6"]
    assert "without a recorded start" in unmarked[0].text
    stray = check_runs_owned(_family(frozenset({"b1"})), ["child-b"], ["child-b"])
    assert ["no session committed" in v.text for v in stray] == [True]
    rerun = check_runs_owned(_family(frozenset({"b1"})), ["child-a"], ["child-a", "child-a"])
    assert ["re-ran" in v.text for v in rerun] == [True]


def test_a_childs_findings_name_it_and_skip_the_follow_up() -> None:
    child = dataclasses.replace(_family(frozenset({"b1"}))[1], followup=False, label="child c1")
    # Its call has no result and nothing repaired it: I1 names the child; no follow-up
    # finding (no follow-up runs in a child).
    found = check_crash(child)
    assert found
    assert all(v.text.startswith("child c1: ") for v in found)
    assert not any("follow-up turn" in v.text or "recovery note" in v.text for v in found)
