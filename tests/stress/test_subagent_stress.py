"""The stress harness on `task` children and read-only groups: cancels land in the
child's phases without violations, and the child checks can fail."""

from __future__ import annotations

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.messages import AssistantMessage, ToolCall, UserMessage
from stress.harness import StressOptions, run_stress
from stress.invariants import ChildObservation
from stress.report import format_report
from stress.scenarios import Phase
from tests.stress.test_harness_smoke import _observation

CANCELLED = TurnOutcome.CANCELLED


async def test_cancels_land_while_a_child_runs_a_tool_without_violations() -> None:
    options = StressOptions(
        budget_s=60, scenarios=("subagent-tool",), wires=("anthropic",), jobs=2, max_ks=4
    )
    report = await run_stress(options)
    [group] = report.groups
    assert group.skipped is None, format_report(report)
    assert group.violations == [], format_report(report)
    assert group.phases[Phase.CHILD_TOOL_RUNNING] >= 1, format_report(report)
    assert report.ok, format_report(report)


async def test_a_cancel_before_the_child_turn_begins_is_an_honest_result() -> None:
    """Regression: a cancel landing after the `task` call started but before its child's
    turn began (waiting for a slot, creating the child session) gave `started=False` with
    content that did not say "not started" (I5). Every k of the scenario is run."""
    options = StressOptions(
        budget_s=150, scenarios=("subagent-tool",), wires=("anthropic",), jobs=2, max_ks=None
    )
    report = await run_stress(options)
    [group] = report.groups
    assert group.skipped is None, format_report(report)
    assert [v for v in group.violations if "I5" in str(v)] == [], format_report(report)
    assert report.ok, format_report(report)


def test_child_checks_catch_an_unpaired_call_and_a_missing_ending() -> None:
    from stress.invariants import check_run

    call = ToolCall("c1", "bash", "{}", freeze({}))
    broken = ChildObservation(
        session_id="child-session",
        context=[UserMessage("do it"), AssistantMessage((call,))],
        events=[ev.UserMessageCommitted(session_id="child-session", text="do it")],
        outcomes=[],
        processes_left=[4242],
    )
    found = {v.invariant for v in check_run(_observation(children=[broken]))}
    assert {"I1", "I2", "I4"} <= found
    fine = ChildObservation(
        session_id="child-session",
        context=[],
        events=[
            ev.TurnEnded(
                session_id="child-session", outcome=TurnOutcome.CANCELLED, reason="x", steps=0
            )
        ],
        outcomes=[CANCELLED],
        processes_left=[],
    )
    assert [v for v in check_run(_observation(children=[fine])) if "child" in v.text] == []
