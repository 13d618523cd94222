"""Cancel at every scheduling point (DESIGN.md §6): run, count, rerun and cancel after step k.

For each scenario × wire format:

1. **Baseline.** Run the scenario once uncancelled on a fresh session (fresh fake model
   server, runtime, store and working directory) while `StepInstrument` counts the steps
   of the session's tasks and records the phase after each step. Its invariants are
   checked too.
2. **Plan.** If the budget allows a run per step, every k in 1..N is run; otherwise a
   seeded sample: a few k from each required phase (by the baseline's phase map), then one
   random k per equal stratum of 1..N. The sample is printed with its seed.
3. **Rerun.** For each k, a fresh session; the instrument cancels the turn right after
   step k (`session.cancel(reason)` from `after_task_step`) and records the phase. Real
   time differs between runs, so step k of a rerun is close to, not identical with, step k
   of the baseline; the phase recorded is the one at the actual cancel.
4. **Check.** After the turn ends: wait up to the liveness bound for the turn's tasks and
   the session's processes to be gone, send a follow-up turn, then check I1–I5
   (`stress.invariants`).

Up to `jobs` runs go at once (they are mostly waiting on streams and sleeps); each run is
its own session, and the instrument counts each session's steps separately.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import ProviderKind
from rawtrio.providers import make_provider
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server
from stress.invariants import Observation, check_run, session_processes
from stress.report import GroupReport, RunResult, StressReport, Violation
from stress.scenarios import (
    FOLLOWUP_PROMPT,
    SCENARIOS,
    TOOL_SETTINGS,
    WIRES,
    Phase,
    StressScenario,
)
from stress.steps import ObservedStore, SessionSteps, StepInstrument

#: The cancel budget of DESIGN.md §4 (100 ms plus the SIGTERM grace), times ten.
LIVENESS_BOUND_S = 10 * (0.1 + TOOL_SETTINGS.sigterm_grace_s)
#: How long a turn may take before the run is reported as hung.
TURN_LIMIT_S = 30.0
#: At least this many k per required phase when sampling.
PER_REQUIRED_PHASE = 4
#: This many k per required phase run even when the group's share of the budget is spent
#: (a slow scenario must still cover each phase it requires).
MUST_PER_REQUIRED_PHASE = 2


@dataclass(frozen=True)
class StressOptions:
    budget_s: float = 180.0
    seed: int = 1
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    wires: tuple[ProviderKind, ...] = WIRES
    jobs: int = 4
    #: Cap on the number of k per group (None: as many as the budget allows).
    max_ks: int | None = None


def provider_settings(server: FakeModelServer, wire: ProviderKind) -> ProviderSettings:
    base = server.base_url if wire == "anthropic" else server.openai_base_url
    return ProviderSettings(
        kind=wire, model="test-model", api_key="test-key", base_url=base, max_retries=0
    )


async def run_stress(options: StressOptions) -> StressReport:
    """Run every selected scenario × wire within `options.budget_s`; never raises on findings."""
    report = StressReport(options.budget_s, options.seed, options.jobs)
    started = time.monotonic()
    deadline = trio.current_time() + options.budget_s
    instrument = StepInstrument()
    groups = [(SCENARIOS[s], w) for s in options.scenarios for w in options.wires]
    trio.lowlevel.add_instrument(instrument)
    try:
        for i, (scenario, wire) in enumerate(groups):
            share = (deadline - trio.current_time()) / (len(groups) - i)
            group_deadline = trio.current_time() + max(share, 0.0)
            rng = random.Random(f"{options.seed}:{scenario.name}:{wire}")
            report.groups.append(
                await run_group(instrument, scenario, wire, group_deadline, rng, options)
            )
    finally:
        trio.lowlevel.remove_instrument(instrument)
    report.elapsed_s = time.monotonic() - started
    return report


async def run_group(
    instrument: StepInstrument,
    scenario: StressScenario,
    wire: ProviderKind,
    deadline: float,
    rng: random.Random,
    options: StressOptions,
) -> GroupReport:
    group = GroupReport(scenario.name, wire, scenario.required, seed=options.seed)
    # A warm-up run first: the first session of a wire imports its SDK (~1 s), which would
    # spoil the baseline's duration and so the number of k the budget allows.
    await run_case(instrument, scenario, wire, cancel_at=None)
    baseline, phase_map = await run_case(instrument, scenario, wire, cancel_at=None)
    group.baseline = baseline
    if baseline.outcome != TurnOutcome.COMPLETED.value or baseline.steps == 0:
        group.skipped = f"the uncancelled baseline did not complete ({baseline.outcome})"
        return group
    left = deadline - trio.current_time()
    capacity = max(1, int(left * options.jobs / max(baseline.duration_s, 0.05)))
    if options.max_ks is not None:
        capacity = min(capacity, options.max_ks)
    ks, group.sampled = plan_ks(baseline.steps, phase_map, capacity, rng, scenario.required)
    group.planned = len(ks)
    durations = [baseline.duration_s]
    queue = iter(enumerate(ks))
    # The plan starts with the required phases, interleaved: those first runs are made
    # whatever the budget says, so every required phase gets its cancels.
    must = MUST_PER_REQUIRED_PHASE * len(scenario.required)

    async def worker() -> None:
        for i, k in queue:
            expected = statistics_mean(durations[-8:])
            if i >= must and trio.current_time() + expected > deadline and group.runs:
                return
            result, _ = await run_case(instrument, scenario, wire, cancel_at=k)
            durations.append(result.duration_s)
            group.runs.append(result)

    async with trio.open_nursery() as nursery:
        for _ in range(max(1, options.jobs)):
            nursery.start_soon(worker)
    group.runs.sort(key=lambda r: r.k or 0)
    return group


def statistics_mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def plan_ks(
    n: int,
    phase_map: Sequence[str],
    capacity: int,
    rng: random.Random,
    required: Sequence[frozenset[str]],
) -> tuple[list[int], bool]:
    """The k to run, in the order to run them, and whether they are a sample.

    Required phases come first, interleaved (one k of each, then a second of each, …),
    so a budget cut short still covers every one of them; the rest is shuffled, so the
    runs done before the budget ends are spread over 1..n.
    """
    if capacity >= n:
        ks = list(range(1, n + 1))
        rng.shuffle(ks)
        return _required_first(ks, phase_map, required), False
    per_phase = []
    for req in required:
        candidates = [k for k in range(1, n + 1) if phase_map[k - 1] in req]
        per_phase.append(_stratified(candidates, min(PER_REQUIRED_PHASE, len(candidates)), rng))
    picks = _interleave(per_phase)
    chosen = set(picks)
    rest = _stratified(list(range(1, n + 1)), max(0, capacity - len(chosen)), rng)
    others = [k for k in rest if k not in chosen]
    rng.shuffle(others)
    return picks + others, True


def _stratified(values: list[int], count: int, rng: random.Random) -> list[int]:
    """`count` values: one random pick from each of `count` equal slices of `values`."""
    if count <= 0 or not values:
        return []
    count = min(count, len(values))
    bounds = [round(i * len(values) / count) for i in range(count + 1)]
    return [values[rng.randrange(bounds[i], bounds[i + 1])] for i in range(count)]


def _required_first(
    ks: list[int], phase_map: Sequence[str], required: Sequence[frozenset[str]]
) -> list[int]:
    per_phase = [
        [k for k in ks if phase_map[k - 1] in req][:PER_REQUIRED_PHASE] for req in required
    ]
    first = _interleave(per_phase)
    return first + [k for k in ks if k not in first]


def _interleave(lists: Sequence[list[int]]) -> list[int]:
    """The first of each list, then the second of each, …, each k once."""
    out: list[int] = []
    for i in range(max((len(x) for x in lists), default=0)):
        out += [x[i] for x in lists if i < len(x) and x[i] not in out]
    return out


async def run_case(
    instrument: StepInstrument,
    scenario: StressScenario,
    wire: ProviderKind,
    *,
    cancel_at: int | None,
) -> tuple[RunResult, list[str]]:
    """One run from scratch; returns its result and (for the baseline) the phase map."""
    started = time.monotonic()
    script = Scenario.from_dict(scenario.script())
    steps: SessionSteps | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="rawtrio-stress-") as tmp:
            cwd = Path(tmp)
            async with open_fake_model_server(script) as server:
                store = ObservedStore()
                settings = provider_settings(server, wire)
                # Built in a worker thread: an SDK client loads its TLS context (~40 ms of
                # blocking work) that would otherwise stall the concurrent runs' loops.
                provider = await trio.to_thread.run_sync(make_provider, settings)
                async with open_runtime(store, provider_factory=lambda _: provider) as runtime:
                    options = SessionOptions(
                        cwd=cwd,
                        provider=settings,
                        tools=TOOL_SETTINGS,
                        max_steps=8,
                        # e.g. the MCP servers of an MCP scenario, in this run's directory
                        **(scenario.session_options(cwd) if scenario.session_options else {}),
                    )
                    session = await runtime.create_session(options)
                    steps = instrument.watch(
                        session,
                        cancel_at=cancel_at,
                        record_phases=cancel_at is None,
                        reason=f"stress: cancel after step {cancel_at}",
                    )
                    try:
                        obs = await _observe(session, store, server, steps, scenario, script, cwd)
                    finally:
                        instrument.unwatch(steps)
    except Exception as exc:  # a crash of the run is a finding, not the end of the suite
        phase = steps.cancel.phase if steps and steps.cancel else Phase.AFTER_END
        violation = Violation("harness", f"the run raised {type(exc).__name__}: {exc}")
        return RunResult(
            cancel_at,
            phase,
            "crashed",
            steps.steps if steps else 0,
            time.monotonic() - started,
            [violation],
        ), []
    cancel = steps.cancel
    result = RunResult(
        k=cancel_at,
        phase=Phase.AFTER_END if cancel is None or not cancel.landed else cancel.phase,
        outcome=obs.ended.outcome.value if obs.ended else "hung",
        steps=steps.steps,
        duration_s=time.monotonic() - started,
        violations=check_run(obs),
    )
    if cancel is not None and cancel.landed and obs.ended is not None:
        result.cancel_to_end_s = obs.ended.ts - cancel.at
    result.quiet_s = obs.quiet_s
    return result, steps.phases


async def _observe(
    session: Session,
    store: ObservedStore,
    server: FakeModelServer,
    steps: SessionSteps,
    scenario: StressScenario,
    script: Scenario,
    cwd: Path,
) -> Observation:
    turn_id = await session.submit(scenario.prompt)
    ended: ev.TurnEnded | None = None
    with trio.move_on_after(TURN_LIMIT_S):
        ended = await session.wait_turn(turn_id)
    errors = list(steps.errors)
    if ended is None:
        session.cancel("stress: the turn hung")
        with trio.move_on_after(TURN_LIMIT_S):
            await session.wait_turn(turn_id)
    quiet_started = time.monotonic()
    if not scenario.session_scoped:
        tasks_left, processes_left = await _wait_quiet(steps, session.id)
    quiet_s = time.monotonic() - quiet_started
    # Counting ends with the measured turn; a k beyond its last step never cancels.
    steps.stop()
    context_after_turn = list(session.context)
    seen = len(server.requests)
    followup: ev.TurnEnded | None = None
    with trio.move_on_after(TURN_LIMIT_S):
        followup = await session.run_turn(FOLLOWUP_PROMPT)
    if scenario.session_scoped:
        # Background jobs belong to the session: they must be gone once it closes.
        events = await session.events_since(0)
        quiet_started = time.monotonic()
        with trio.move_on_after(TURN_LIMIT_S):
            await session.close("stress: closing the session")
        tasks_left, processes_left = await _wait_quiet(steps, session.id)
        quiet_s = time.monotonic() - quiet_started
    statuses = [
        r.status
        for r in server.requests[seen:]
        if r.user_text is not None and FOLLOWUP_PROMPT in r.user_text
    ]
    record = store.turn(session.id, turn_id)
    return Observation(
        scenario=scenario,
        script=script,
        session_id=session.id,
        turn_id=turn_id,
        cancel=steps.cancel,
        ended=ended,
        store_outcome=record.outcome,
        events=events if scenario.session_scoped else await session.events_since(0),
        context_after_turn=context_after_turn,
        context_final=list(session.context),
        turn_tasks_left=tasks_left,
        processes_left=processes_left,
        liveness_bound_s=LIVENESS_BOUND_S,
        quiet_s=quiet_s,
        followup=followup,
        followup_statuses=statuses,
        marker_exists=scenario.marker is not None and (cwd / scenario.marker).exists(),
        harness_errors=errors,
    )


async def _wait_quiet(steps: SessionSteps, session_id: str) -> tuple[list[str], list[int]]:
    """Wait (up to the liveness bound) until the turn's tasks and processes are gone.

    Tasks are checked first (a dictionary lookup), then /proc: once inline, and while
    something is left, in a worker thread so the scans do not stall concurrent runs.
    """
    # Polling: there is no event for "the last process carrying the marker exited".
    found: list[int] = []
    with trio.move_on_after(LIVENESS_BOUND_S) as bound:
        while True:
            if not steps.turn_tasks():
                break
            await trio.sleep(0.001)
        # The first scan inline (under 1 ms): normally every process is reaped already.
        found = session_processes(session_id)
        while found:
            await trio.sleep(0.005)
            found = await trio.to_thread.run_sync(session_processes, session_id)
    if bound.cancelled_caught:
        found = session_processes(session_id)
    return steps.turn_tasks(), found
