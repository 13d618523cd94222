"""The stress harness itself: a handful of cancellation points, and checks that can fail."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import AssistantMessage, Message, TextPart, UserMessage
from rawtrio.testing.fake_model import Scenario
from stress.harness import StressOptions, plan_ks, run_stress
from stress.invariants import Observation, check_run
from stress.report import format_report
from stress.scenarios import STREAM, TOOL, Phase


async def test_harness_lands_cancels_in_streaming_without_violations() -> None:
    options = StressOptions(
        budget_s=60, scenarios=("stream",), wires=("anthropic",), jobs=2, max_ks=6
    )
    report = await run_stress(options)
    [group] = report.groups
    assert group.skipped is None, format_report(report)
    assert group.violations == [], format_report(report)
    assert 1 <= len(group.runs) <= 6
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
