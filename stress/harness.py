"""Cancel at every scheduling point (docs/stress.md): run, count, rerun and cancel after step k.

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
its own session (own runtime, store and working directory), and the instrument counts each
session's steps separately. The runs of a group share one fake model server and one
provider client (building an SDK client costs ~40 ms of CPU, most of a run's own cost):
each run's prompts carry a run number, so the server's request log tells them apart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import multiprocessing
import random
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import ProviderKind
from rawtrio.permissions.approval import ApprovalDecision, ApprovalError
from rawtrio.providers import make_provider
from rawtrio.providers.base import ModelRequest, Provider, ProviderSettings, StreamEvent
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server
from stress.faults import FaultyStore, FlakyOnce
from stress.invariants import ChildObservation, Observation, check_run, session_processes
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

#: The cancel budget of docs/contracts.md (I4) (100 ms plus the SIGTERM grace), times ten.
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
    #: The (scenario, wire) groups to run, in order (None: every selected scenario × wire).
    groups: tuple[tuple[str, ProviderKind], ...] | None = None

    def selected_groups(self) -> list[tuple[str, ProviderKind]]:
        if self.groups is not None:
            return list(self.groups)
        return [(s, w) for s in self.scenarios for w in self.wires]


def provider_settings(
    server: FakeModelServer, wire: ProviderKind, scenario: StressScenario | None = None
) -> ProviderSettings:
    base = server.base_url if wire == "anthropic" else server.openai_base_url
    settings = ProviderSettings(
        kind=wire, model="test-model", api_key="test-key", base_url=base, max_retries=0
    )
    if scenario is not None and scenario.provider_options:
        settings = dataclasses.replace(settings, **scenario.provider_options)
    return settings


class SharedProvider:
    """One provider client for the runs of a group: each session closes its provider when
    it ends, so this one's `aclose` does nothing; the group closes `inner` at its end."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.kind = inner.kind

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        return self.inner.stream(request)

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


@dataclass
class GroupEnv:
    """What the runs of one group share: the fake model server, the provider, run numbers."""

    server: FakeModelServer
    settings: ProviderSettings
    provider: SharedProvider
    script: Scenario
    numbers: itertools.count[int]


async def run_stress(options: StressOptions) -> StressReport:
    """Run every selected scenario × wire within `options.budget_s`; never raises on findings."""
    report = StressReport(options.budget_s, options.seed, options.jobs)
    started = time.monotonic()
    deadline = trio.current_time() + options.budget_s
    instrument = StepInstrument()
    groups = [(SCENARIOS[s], w) for s, w in options.selected_groups()]
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


def quiet_warnings() -> None:
    # The OpenAI SDK's streams leave exhausted async generators to the GC.
    warnings.filterwarnings(
        "ignore",
        message="Async generator .* was garbage collected",
        category=ResourceWarning,
    )


def run_in_process(options: StressOptions) -> StressReport:
    """One worker process's share of the groups (a trio run of its own)."""
    quiet_warnings()
    return trio.run(partial(run_stress, options))


def run_parallel(options: StressOptions, procs: int) -> StressReport:
    """The groups dealt round-robin to `procs` processes, each with the whole budget (one
    trio run uses one core: the steps are Python), the reports merged in group order."""
    groups = options.selected_groups()
    procs = max(1, min(procs, len(groups)))
    if procs == 1:
        return run_in_process(options)
    shares = [dataclasses.replace(options, groups=tuple(groups[i::procs])) for i in range(procs)]
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=procs, mp_context=context) as pool:
        reports = list(pool.map(run_in_process, shares))
    merged = StressReport(options.budget_s, options.seed, options.jobs)
    order: dict[tuple[str, str], int] = {g: i for i, g in enumerate(groups)}
    merged.groups = sorted(
        (g for r in reports for g in r.groups), key=lambda g: order[(g.scenario, g.wire)]
    )
    merged.elapsed_s = time.monotonic() - started
    return merged


async def run_group(
    instrument: StepInstrument,
    scenario: StressScenario,
    wire: ProviderKind,
    deadline: float,
    rng: random.Random,
    options: StressOptions,
) -> GroupReport:
    group = GroupReport(scenario.name, wire, scenario.required, seed=options.seed)
    script = Scenario.from_dict(scenario.script())
    served = FlakyOnce.wrap(script) if scenario.errors_once else script
    async with open_fake_model_server(served) as server:
        settings = provider_settings(server, wire, scenario)
        # Built in a worker thread: an SDK client loads its TLS context (~40 ms of
        # blocking work) that would otherwise stall the concurrent runs' loops.
        inner = await trio.to_thread.run_sync(make_provider, settings)
        env = GroupEnv(server, settings, SharedProvider(inner), script, itertools.count(1))
        try:
            await _run_group(instrument, scenario, env, deadline, rng, options, group)
        finally:
            with trio.move_on_after(5) as cleanup:
                cleanup.shield = True
                await inner.aclose()
    group.runs.sort(key=lambda r: r.k or 0)
    return group


async def _run_group(
    instrument: StepInstrument,
    scenario: StressScenario,
    env: GroupEnv,
    deadline: float,
    rng: random.Random,
    options: StressOptions,
    group: GroupReport,
) -> None:
    # A warm-up run first: the first session of a wire imports its SDK (~1 s), which would
    # spoil the baseline's duration and so the number of k the budget allows.
    await run_case(instrument, scenario, env, cancel_at=None)
    baseline, phase_map = await run_case(instrument, scenario, env, cancel_at=None)
    group.baseline = baseline
    if baseline.outcome != TurnOutcome.COMPLETED.value or baseline.steps == 0:
        group.skipped = f"the uncancelled baseline did not complete ({baseline.outcome})"
        return
    # A store-fault scenario fails write 1 + (k - 1) mod W of the turn (W: the baseline's).
    writes = baseline.writes if scenario.store_faults else 0
    left = deadline - trio.current_time()
    capacity = max(1, int(left * options.jobs / max(baseline.duration_s, 0.05)))
    if options.max_ks is not None:
        capacity = min(capacity, options.max_ks)
    anchors = phase_anchors(phase_map, scenario.required)
    ks, group.sampled = plan_ks(baseline.steps, phase_map, capacity, rng, scenario.required)
    group.planned = len(ks) + len(anchors)
    durations = [baseline.duration_s]
    plan: list[int | tuple[str, int]] = [*anchors, *ks]
    queue = iter(enumerate(plan))
    # The plan starts with the required phases, interleaved: those first runs are made
    # whatever the budget says, so every required phase gets its cancels.
    must = MUST_PER_REQUIRED_PHASE * len(scenario.required) + len(anchors)

    async def worker() -> None:
        for i, point in queue:
            expected = statistics_mean(durations[-8:])
            if i >= must and trio.current_time() + expected > deadline and group.runs:
                return
            fault_at = 1 + i % writes if writes else None
            if isinstance(point, int):
                result, _ = await run_case(
                    instrument, scenario, env, cancel_at=point, fault_at=fault_at
                )
            else:
                result, _ = await run_case(
                    instrument, scenario, env, cancel_at=None, cancel_in=point, fault_at=fault_at
                )
            durations.append(result.duration_s)
            group.runs.append(result)

    async with trio.open_nursery() as nursery:
        for _ in range(max(1, options.jobs)):
            nursery.start_soon(worker)


#: Cancels anchored to a phase (the n-th step in it) when the baseline has fewer steps in a
#: required phase than this (a wait is one scheduling point; it moves between reruns).
NARROW_PHASE_STEPS = PER_REQUIRED_PHASE


def phase_anchors(
    phase_map: Sequence[str], required: Sequence[frozenset[str]]
) -> list[tuple[str, int]]:
    """`(phase, n)` cancel points ("cancel at the n-th step that ends in this phase") for
    the required phases, run first: the first step of each required phase the baseline
    reached (so a budget cut short still lands in every one), every step of a narrow one
    (fewer than `NARROW_PHASE_STEPS`), and two for a phase the baseline never reached (a
    store error: the baseline has no fault)."""
    anchors: list[tuple[str, int]] = []
    for req in required:
        counts = {p: phase_map.count(p) for p in sorted(req)}
        narrow = sum(counts.values()) < NARROW_PHASE_STEPS
        for p, c in counts.items():
            if c == 0 and any(counts.values()):
                continue
            n = (c or 2) if narrow else 1
            anchors += [(p, i) for i in range(1, n + 1) if (p, i) not in anchors]
    return anchors


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
    env: GroupEnv,
    *,
    cancel_at: int | None,
    cancel_in: tuple[str, int] | None = None,
    fault_at: int | None = None,
) -> tuple[RunResult, list[str]]:
    """One run from scratch; returns its result and (for the baseline) the phase map."""
    started = time.monotonic()
    number = next(env.numbers)
    steps: SessionSteps | None = None
    store: ObservedStore = FaultyStore(fault_at) if scenario.store_faults else ObservedStore()
    try:
        with tempfile.TemporaryDirectory(prefix="rawtrio-stress-") as tmp:
            cwd = Path(tmp)
            provider = env.provider
            async with open_runtime(store, provider_factory=lambda _: provider) as runtime:
                options = SessionOptions(
                    cwd=cwd,
                    provider=env.settings,
                    tools=TOOL_SETTINGS,
                    max_steps=8,
                    # e.g. the MCP servers of an MCP scenario, in this run's directory
                    **(scenario.session_options(cwd) if scenario.session_options else {}),
                )
                session = await runtime.create_session(options)
                for setup in scenario.setup_prompts:
                    done = await session.run_turn(f"{setup} (run {number})")
                    if done.outcome is not TurnOutcome.COMPLETED:
                        raise RuntimeError(f"setup turn {setup!r} ended {done.outcome.value}")
                steps = instrument.watch(
                    session,
                    cancel_at=cancel_at,
                    cancel_in=cancel_in,
                    record_phases=cancel_at is None and cancel_in is None,
                    reason=f"stress: cancel after step {cancel_at or cancel_in}",
                )
                run = RunContext(number, env.server, cwd, len(env.server.requests))
                if scenario.errors_once:
                    steps.failed_request = run.failed_request
                try:
                    obs = await _observe(session, store, steps, scenario, env.script, run)
                finally:
                    instrument.unwatch(steps)
    except Exception as exc:  # a crash of the run is a finding, not the end of the suite
        phase = steps.cancel.phase if steps and steps.cancel else Phase.AFTER_END
        violation = Violation("harness", f"the run raised {_describe(exc)}")
        return RunResult(
            _k(cancel_at, cancel_in, steps),
            phase,
            "crashed",
            steps.steps if steps else 0,
            time.monotonic() - started,
            [violation],
            fault=_fault(store),
        ), []
    cancel = steps.cancel
    result = RunResult(
        k=_k(cancel_at, cancel_in, steps),
        phase=Phase.AFTER_END if cancel is None or not cancel.landed else cancel.phase,
        outcome=obs.ended.outcome.value if obs.ended else "hung",
        steps=steps.steps,
        duration_s=time.monotonic() - started,
        violations=check_run(obs),
        writes=store.writes if isinstance(store, FaultyStore) else 0,
        fault=_fault(store),
    )
    if cancel is not None and cancel.landed and obs.ended is not None:
        result.cancel_to_end_s = obs.ended.ts - cancel.at
    result.quiet_s = obs.quiet_s
    return result, steps.phases


def _describe(exc: BaseException) -> str:
    """`Type: message`, or for an exception group each leaf's (what escaped, e.g. a session's
    nursery taking the runtime down)."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = "; ".join(_describe(e) for e in exc.exceptions)
        return f"{type(exc).__name__} [{leaves}]"
    return f"{type(exc).__name__}: {exc}"


def _k(
    cancel_at: int | None, cancel_in: tuple[str, int] | None, steps: SessionSteps | None
) -> int | None:
    """The step the cancel came after (an anchored cancel that never came: the last step)."""
    if cancel_in is None or steps is None:
        return cancel_at
    return steps.cancel.k if steps.cancel is not None else steps.steps


def _fault(store: ObservedStore) -> str | None:
    return store.fired if isinstance(store, FaultyStore) else None


@dataclass
class RunContext:
    """One run's number (in its prompts), the group's server and the run's directory."""

    number: int
    server: FakeModelServer
    cwd: Path
    #: Requests the server had recorded before this run's measured turn.
    first_request: int

    @property
    def tag(self) -> str:
        return f"(run {self.number})"

    def requests(self) -> list[int]:
        """HTTP statuses of this run's requests (0 while unanswered), in order."""
        return [
            r.status
            for r in self.server.requests[self.first_request :]
            if r.user_text is not None and self.tag in r.user_text
        ]

    def failed_request(self) -> bool:
        """This run's last model request was refused, and no retry was sent yet."""
        for r in reversed(self.server.requests[self.first_request :]):
            if r.user_text is not None and self.tag in r.user_text:
                return r.status >= 400
        return False


async def _observe(
    session: Session,
    store: ObservedStore,
    steps: SessionSteps,
    scenario: StressScenario,
    script: Scenario,
    run: RunContext,
) -> Observation:
    async with trio.open_nursery() as nursery:
        if scenario.approve_after_s is not None:
            await nursery.start(_approver, session, scenario.approve_after_s)
        try:
            return await _observe_turn(session, store, steps, scenario, script, run)
        finally:
            nursery.cancel_scope.cancel(reason="stress: the run is over")


async def _approver(
    session: Session, after_s: float, *, task_status: trio.TaskStatus[None]
) -> None:
    """The scripted user: allows each permission request `after_s` seconds after it came."""

    async def answer(request_id: str) -> None:
        await trio.sleep(after_s)
        # An ApprovalError: cancelled meanwhile (the turn was), nothing to answer.
        with contextlib.suppress(ApprovalError):
            session.answer_permission(request_id, ApprovalDecision.allow_once("stress approver"))

    with session.subscribe(buffer=10_000) as events:
        task_status.started()
        async with trio.open_nursery() as nursery:
            async for event in events:
                if isinstance(event, ev.PermissionRequested):
                    nursery.start_soon(answer, event.request_id)


async def _observe_turn(
    session: Session,
    store: ObservedStore,
    steps: SessionSteps,
    scenario: StressScenario,
    script: Scenario,
    run: RunContext,
) -> Observation:
    if isinstance(store, FaultyStore):
        store.arm(session.id)
    turn_id = await session.submit(f"{scenario.prompt} {run.tag}")
    ended: ev.TurnEnded | None = None
    with trio.move_on_after(TURN_LIMIT_S):
        ended = await session.wait_turn(turn_id)
    errors = list(steps.errors)
    if ended is None:
        session.cancel("stress: the turn hung")
        with trio.move_on_after(TURN_LIMIT_S):
            await session.wait_turn(turn_id)
    if isinstance(store, FaultyStore):
        store.disarm()  # the fault cleared: the follow-up turn must work
    quiet_started = time.monotonic()
    if not scenario.session_scoped:
        tasks_left, processes_left = await _wait_quiet(steps, session.id)
    quiet_s = time.monotonic() - quiet_started
    # Counting ends with the measured turn; a k beyond its last step never cancels.
    steps.stop()
    context_after_turn = list(session.context)
    seen = len(run.requests())
    followup: ev.TurnEnded | None = None
    with trio.move_on_after(TURN_LIMIT_S):
        followup = await session.run_turn(f"{FOLLOWUP_PROMPT} {run.tag}")
    stored_context = await store.load_context(session.id)
    if scenario.session_scoped:
        # Background jobs belong to the session: they must be gone once it closes.
        events = await session.events_since(0)
        quiet_started = time.monotonic()
        with trio.move_on_after(TURN_LIMIT_S):
            await session.close("stress: closing the session")
        tasks_left, processes_left = await _wait_quiet(steps, session.id)
        quiet_s = time.monotonic() - quiet_started
    statuses = run.requests()[seen:]
    record = store.turn(session.id, turn_id)
    children = await _children(store, session.id)
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
        marker_exists=scenario.marker is not None and (run.cwd / scenario.marker).exists(),
        harness_errors=errors,
        fault=store.fired if isinstance(store, FaultyStore) else None,
        context_at_fault=store.context_at_fault if isinstance(store, FaultyStore) else [],
        stored_context=stored_context,
        children=children,
    )


async def _children(store: ObservedStore, session_id: str) -> list[ChildObservation]:
    """Every `task` child of the session (and theirs), as stored."""
    found: list[ChildObservation] = []
    for child in await store.list_children(session_id):
        events = await store.events_since(child.id, 0)
        turns = [e.turn_id for e in events if isinstance(e, ev.TurnEnded)]
        found.append(
            ChildObservation(
                session_id=child.id,
                context=await store.load_context(child.id),
                events=events,
                outcomes=[store.turn(child.id, t).outcome for t in turns if t is not None],
                processes_left=session_processes(child.id),
            )
        )
        found += await _children(store, child.id)
    return found


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
