"""The crash suite itself: a few real SIGKILLs, and checks that fail when they should."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from typing import Any

import pytest
import trio

from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import AssistantMessage, Message, TextPart, ToolCall, ToolResult, UserMessage
from rawtrio.processes.subreaper import SESSION_ENV_VAR
from rawtrio.store import codec
from stress.crash import CrashOptions, format_report, phase_of, run_crash, wait_for_orphans
from stress.crash_checks import CrashObservation, DbSnapshot, check_crash

#: Liveness only: a child starts in a few seconds; three runs and a baseline.
LIVENESS_S = 300


@pytest.mark.skipif(sys.platform != "linux", reason="SIGKILL, /proc")
async def test_killed_children_reopen_with_i1_i6_i7_holding() -> None:
    options = CrashOptions(
        budget_s=15, seed=11, jobs=1, wires=("openai-chat",), scenarios=("tools",), max_runs=3
    )
    with trio.fail_after(LIVENESS_S):
        report = await run_crash(options)
    text = format_report(report)
    assert list(report.baselines) == ["tools"], text
    assert 1 <= len(report.runs) <= 3, text
    assert report.violations == [], text
    assert report.ok, text
    assert text.splitlines()[-1].startswith("crash: ")
    assert " 0 survivors, 0 violations" in text.splitlines()[-1]


def test_phase_is_read_from_the_last_line() -> None:
    assert phase_of([]) == "starting"
    assert phase_of(["ready s1", "begin begin_turn"]) == "writing (begin_turn)"
    assert phase_of(["ready s1", "event 7 tool_output_delta"]) == "tool running"
    assert phase_of(["ready s1", "done"]) == "finished (no kill)"


CALL = ToolCall.parse("c1", "bash", '{"command": "echo one >> runs.txt; sleep 0.1"}')


def _rows(messages: list[Message]) -> tuple[str, ...]:
    return tuple(codec.message_to_row(m) for m in messages)


def _observation(**changes: Any) -> CrashObservation:
    """A kill while the call ran (start recorded, line written), repaired correctly."""
    before: list[Message] = [UserMessage("crash-turn-one"), AssistantMessage((TextPart("x"), CALL))]
    result = ToolResult("c1", "bash", ToolStatus.OUTCOME_UNKNOWN, "unknown", started=True)
    reopened = [*before, result]
    ended = {"type": "turn_ended", "turn_id": "t1"}
    lines = [
        "ready s1",
        f"committed {json.dumps(_rows(before[:1]))}",
        "event 1 user_message",
        f"committed {json.dumps(_rows(before[1:]))}",
        "started c1",
    ]
    return dataclasses.replace(
        CrashObservation(
            lines=lines,
            before=DbSnapshot(
                _rows(before), {1: ("user_message", "{}")}, {"t1": None}, frozenset({"c1"})
            ),
            reopened=DbSnapshot(
                _rows(reopened),
                {1: ("user_message", "{}"), 2: ("turn_ended", json.dumps(ended))},
                {"t1": TurnOutcome.INTERRUPTED.value},
                frozenset({"c1"}),
            ),
            after=DbSnapshot(_rows(reopened), {1: ("user_message", "{}")}),
            context=reopened,
            runs_before=["one"],
            runs_after=["one"],
            followup_outcome="completed",
            followup_statuses=[200],
            followup_user_texts=["[rawtrio: the previous turn was interrupted ...] next"],
            context_after_followup=reopened,
        ),
        **changes,
    )


def test_checks_pass_on_a_correct_repair() -> None:
    assert check_crash(_observation()) == []


def test_checks_report_a_started_call_called_never_started_and_a_rerun() -> None:
    obs = _observation()
    wrong = ToolResult("c1", "bash", ToolStatus.CANCELLED, "never started", started=False)
    rows = (*obs.reopened.context[:2], codec.message_to_row(wrong))
    obs = _observation(
        reopened=dataclasses.replace(obs.reopened, context=rows), runs_after=["one", "one"]
    )
    assert sorted({v.invariant for v in check_crash(obs)}) == ["I6"]
    assert len(check_crash(obs)) == 2


def test_checks_report_a_lost_commit_and_a_refused_followup() -> None:
    obs = _observation()
    lost = dataclasses.replace(obs.reopened, context=obs.reopened.context[:1])
    found = {v.invariant for v in check_crash(_observation(reopened=lost, followup_statuses=[400]))}
    assert {"I1", "I7"} <= found


@pytest.mark.skipif(sys.platform != "linux", reason="/proc")
async def test_a_tool_process_still_running_2_s_after_the_kill_is_a_survivor() -> None:
    session = "crash-smoke-survivor"
    env = {"PATH": os.environ["PATH"], SESSION_ENV_VAR: session}
    proc = await trio.lowlevel.open_process(["sleep", "1000"], env=env, start_new_session=True)
    try:
        with trio.fail_after(LIVENESS_S):
            seen, survivors = await wait_for_orphans(session, killed_at=time.monotonic())
            assert seen == 1
            assert survivors == [f"{proc.pid}: sleep 1000"]
            assert await proc.wait() == -signal.SIGKILL  # and it was ended
    finally:
        proc.kill()
        with trio.CancelScope(shield=True):
            await proc.wait()
