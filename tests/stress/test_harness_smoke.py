"""The stress harness itself: a handful of cancellation points, and checks that can fail."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import AssistantMessage, Message, TextPart, UserMessage
from rawtrio.store.errors import StoreError
from rawtrio.testing.fake_model import Scenario
from stress.faults import FaultyStore, FlakyOnce
from stress.harness import StressOptions, phase_anchors, plan_ks, run_stress
from stress.invariants import Observation, check_run
from stress.report import GroupReport, RunResult, StressReport, Violation, format_report
from stress.scenarios import STREAM, TOOL, Phase


async def test_harness_lands_cancels_in_streaming_without_violations() -> None:
    options = StressOptions(
        budget_s=60, scenarios=("stream",), wires=("anthropic",), jobs=2, max_ks=6
    )
    report = await run_stress(options)
    [group] = report.groups
    assert group.skipped is None, format_report(report)
    assert group.violations == [], format_report(report)
    assert 1 <= len(group.runs) <= 6 + 2  # the k sample and the phase-anchored cancels
    assert group.phases[Phase.STREAMING] + group.phases[Phase.STREAMING_TOOL_CALL] >= 1
    assert report.ok, format_report(report)


def test_sample_covers_required_phases_first_and_is_seeded() -> None:
    phase_map = [Phase.STREAMING] * 60 + [Phase.TOOL_RUNNING] * 5 + [Phase.STREAMING] * 35
    ks, sampled = plan_ks(100, phase_map, 20, random.Random(7), TOOL.required)
    again, _ = plan_ks(100, phase_map, 20, random.Random(7), TOOL.required)
    assert sampled
    assert ks == again
    assert len(set(ks)) == len(ks) <= 20
    # Interleaved: the first k of the plan already covers each required phase, so a
    # budget cut short after a few runs (a slow scenario) still cancels in every one.
    first = ks[: len(TOOL.required)]
    assert [phase_map[k - 1] in req for k, req in zip(first, TOOL.required, strict=True)] == [
        True
    ] * len(TOOL.required)
    small = [Phase.STREAMING] * 5 + [Phase.TOOL_RUNNING] * 5
    everything, sampled_all = plan_ks(10, small, 50, random.Random(3), TOOL.required)
    assert not sampled_all
    assert [small[k - 1] for k in everything[:2]] == [Phase.STREAMING, Phase.TOOL_RUNNING]


def test_every_k_is_run_when_the_budget_allows() -> None:
    ks, sampled = plan_ks(10, [Phase.STREAMING] * 10, 50, random.Random(1), STREAM.required)
    assert not sampled
    assert sorted(ks) == list(range(1, 11))


def _observation(**changes: Any) -> Observation:
    script = Scenario.from_dict(STREAM.script())
    full = script.pick(STREAM.prompt, 0).text
    ended = ev.TurnEnded(
        session_id="s", seq=5, turn_id="t", outcome=TurnOutcome.COMPLETED, reason="", steps=1
    )
    context: list[Message] = [UserMessage(STREAM.prompt), AssistantMessage((TextPart(full),))]
    followup = ev.TurnEnded(
        session_id="s", seq=9, turn_id="f", outcome=TurnOutcome.COMPLETED, reason="", steps=1
    )
    clean = Observation(
        scenario=STREAM,
        script=script,
        session_id="s",
        turn_id="t",
        cancel=None,
        ended=ended,
        store_outcome=TurnOutcome.COMPLETED,
        events=[ended],
        context_after_turn=context,
        context_final=context,
        turn_tasks_left=[],
        processes_left=[],
        liveness_bound_s=3.0,
        quiet_s=0.0,
        followup=followup,
        followup_statuses=[200],
        marker_exists=False,
    )
    return dataclasses.replace(clean, **changes)


def test_checks_pass_on_a_clean_run() -> None:
    assert check_run(_observation()) == []


def test_checks_report_a_torn_message_and_a_second_ending() -> None:
    torn: list[Message] = [UserMessage(STREAM.prompt), AssistantMessage((TextPart("Once upon"),))]
    obs = _observation(context_final=torn)
    obs.events = [*obs.events, obs.events[0]]
    found = {v.invariant for v in check_run(obs)}
    assert found == {"I2", "I3"}


def test_checks_report_a_leftover_process_and_a_refused_followup() -> None:
    obs = _observation(processes_left=[4242], followup_statuses=[400])
    found = sorted(v.invariant for v in check_run(obs))
    assert found == ["I1", "I4"]


async def test_a_cancel_lands_in_a_permission_wait_and_a_retry_wait() -> None:
    # One scheduling point each: found by the phase-anchored cancels, whatever the timing.
    options = StressOptions(
        budget_s=60, scenarios=("permission", "retry"), wires=("anthropic",), jobs=2, max_ks=1
    )
    report = await run_stress(options)
    permission, retry = report.groups
    assert permission.phases[Phase.PERMISSION_WAIT] >= 1, format_report(report)
    assert retry.phases[Phase.RETRY_WAIT] >= 1, format_report(report)
    assert report.ok, format_report(report)


def test_phase_anchors_cover_narrow_and_unreached_required_phases() -> None:
    phase_map = [Phase.STREAMING] * 30 + [Phase.PERMISSION_WAIT] + [Phase.TOOL_RUNNING] * 9
    required = (Phase.STREAMING_ANY, frozenset({Phase.PERMISSION_WAIT}))
    assert phase_anchors(phase_map, required) == [
        (Phase.STREAMING, 1),
        (Phase.PERMISSION_WAIT, 1),
    ]
    unreached = phase_anchors(phase_map, (frozenset({Phase.STORE_ERROR}),))
    assert unreached == [(Phase.STORE_ERROR, 1), (Phase.STORE_ERROR, 2)]


def test_flaky_once_sends_an_error_once_per_request() -> None:
    script = Scenario.from_dict(
        {"rules": [{"match": "x", "replies": [{"text": "ok", "error": {"status": 529}}]}]}
    )
    flaky = FlakyOnce.wrap(script)
    first, retry, other = flaky.pick("x 1", 0), flaky.pick("x 1", 0), flaky.pick("x 2", 0)
    assert first.error is not None
    assert first.error.status == 529
    assert retry.error is None
    assert retry.text == "ok"
    assert other.error is not None


async def test_faulty_store_fails_the_nth_write_once_and_keeps_what_it_had() -> None:
    store = FaultyStore(fail_at=2)
    record = await store.create_session(
        session_id="s", cwd="/tmp", system_prompt="p", provider="anthropic", model="m", title=""
    )
    store.arm(record.id)
    await store.begin_turn(record.id, "t", None)  # not a fault point
    await store.commit(record.id, "t", [UserMessage("kept")])
    with pytest.raises(StoreError):
        await store.mark_call_started(record.id, "t", "c")
    assert store.fired == "mark_call_started"
    assert store.context_at_fault == [UserMessage("kept")]
    await store.mark_call_started(record.id, "t", "c")  # the fault cleared
    assert await store.load_context(record.id) == [UserMessage("kept")]


def test_the_summary_line_counts_points_phases_and_violations() -> None:
    report = StressReport(budget_s=10, seed=1, jobs=1, elapsed_s=2.0)
    group = GroupReport("stream", "anthropic", STREAM.required)
    group.runs = [
        RunResult(1, Phase.STREAMING, "cancelled", 10, 0.1),
        RunResult(2, Phase.HOOK, "cancelled", 10, 0.1, [Violation("I5", "x")]),
    ]
    report.groups = [group]
    line = format_report(report).splitlines()[-1]
    assert line.startswith("cancel: 2 points over 1 scenarios × 1 wires")
    assert "phases: streaming 1, hook 1; 1 violation" in line
