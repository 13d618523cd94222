"""What the stress harness found, and how it is printed.

One `GroupReport` per scenario × wire: the baseline step count, which k were run (all, or
a seeded sample), where each cancel landed, the outcomes, timings and violations. The
printed form is documented in `docs/stress.md`; a run fails when any group has a violation
or a required phase got no cancel.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from stress.scenarios import Phase, required_text


@dataclass(frozen=True)
class Violation:
    invariant: str  # "I1" … "I5", or "harness"
    text: str


@dataclass
class RunResult:
    #: The step the cancel was injected after; None for the uncancelled baseline.
    k: int | None
    phase: str
    #: The turn's outcome ("hung" when it did not end).
    outcome: str
    steps: int
    duration_s: float
    violations: list[Violation] = field(default_factory=list)
    #: Seconds from the cancel to the turn_ended event (cancelled runs only).
    cancel_to_end_s: float | None = None
    #: Seconds from turn_ended until no task or process of the turn was left.
    quiet_s: float = 0.0
    #: Store-fault scenarios: the turn's store writes (counted in the baseline), and the
    #: write that failed ("commit", "end_turn", …; None if the run ended before it).
    writes: int = 0
    fault: str | None = None


@dataclass
class GroupReport:
    scenario: str
    wire: str
    required: tuple[frozenset[str], ...]
    baseline: RunResult | None = None
    #: How many k were planned out of `baseline.steps`, and whether they were sampled.
    planned: int = 0
    sampled: bool = False
    seed: int = 0
    runs: list[RunResult] = field(default_factory=list)
    skipped: str | None = None

    @property
    def phases(self) -> Counter[str]:
        return Counter(r.phase for r in self.runs)

    @property
    def violations(self) -> list[tuple[RunResult, Violation]]:
        runs = [self.baseline, *self.runs] if self.baseline else self.runs
        return [(r, v) for r in runs for v in r.violations]

    @property
    def missing(self) -> list[frozenset[str]]:
        """Required phase sets that got no cancel."""
        hit = set(self.phases)
        return [req for req in self.required if not hit & req]

    @property
    def ok(self) -> bool:
        return self.skipped is None and not self.violations and not self.missing


@dataclass
class StressReport:
    budget_s: float
    seed: int
    jobs: int
    groups: list[GroupReport] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.groups) and all(g.ok for g in self.groups)

    @property
    def total_runs(self) -> int:
        return sum(len(g.runs) + (g.baseline is not None) for g in self.groups)


def format_ks(ks: Iterable[int]) -> str:
    """`1-4,7,9-10`: a sorted set of k, with runs of consecutive values collapsed."""
    values = sorted(set(ks))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)


def _ms(runs: list[RunResult], value: Callable[[RunResult], float | None]) -> str:
    """Median, p99 and max of a per-run duration, naming the run of the max."""
    timed = sorted(((v, r) for r in runs if (v := value(r)) is not None), key=lambda t: t[0])
    if not timed:
        return "n/a"
    values = [v * 1000 for v, _ in timed]
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    worst = timed[-1][1]
    return (
        f"median {statistics.median(values):.1f} ms, p99 {p99:.1f} ms, max {values[-1]:.1f} ms "
        f"(k={worst.k}, {worst.phase})"
    )


def format_group(g: GroupReport) -> list[str]:
    head = f"== {g.scenario} × {g.wire}"
    if g.skipped is not None:
        return [f"{head}: SKIPPED ({g.skipped})"]
    lines = [head]
    b = g.baseline
    if b is not None:
        lines.append(
            f"   baseline: {b.steps} steps of the session's tasks, {b.duration_s:.2f} s, "
            f"outcome {b.outcome}"
        )
        total = b.steps
        how = f"sampled, seed {g.seed}" if g.sampled else "all"
        lines.append(f"   k run: {len(g.runs)} of {total} planned {g.planned} ({how})")
        ks = [r.k for r in g.runs if r.k is not None]
        if g.sampled and ks:
            lines.append(f"   k sample: {format_ks(ks)}")
    counts = g.phases
    phase_text = ", ".join(f"{p} {counts[p]}" for p in Phase.ORDER if counts[p])
    lines.append(f"   phases: {phase_text or 'none'}")
    outcomes = Counter(r.outcome for r in g.runs)
    lines.append("   outcomes: " + ", ".join(f"{o} {n}" for o, n in sorted(outcomes.items())))
    faults = Counter(r.fault for r in g.runs if r.fault is not None)
    if b is not None and b.writes:
        fired = ", ".join(f"{what} {n}" for what, n in sorted(faults.items()))
        lines.append(f"   store faults: {b.writes} writes per turn; fired: {fired or 'none'}")
    lines.append(f"   cancel → turn_ended: {_ms(g.runs, lambda r: r.cancel_to_end_s)}")
    lines.append(f"   turn_ended → quiet: {_ms(g.runs, lambda r: r.quiet_s)}")
    for req in g.missing:
        lines.append(f"   FAIL no cancel landed in phase {required_text(req)}")
    for run, v in g.violations:
        k = "baseline" if run.k is None else f"k={run.k}"
        lines.append(f"   FAIL {v.invariant} {k} [{run.phase}]: {v.text}")
    lines.append(f"   {'ok' if g.ok else 'FAILED'}")
    return lines


def format_report(report: StressReport) -> str:
    lines = [
        f"rawtrio stress: budget {report.budget_s:g} s, seed {report.seed}, "
        f"{report.jobs} concurrent run(s)"
    ]
    for g in report.groups:
        lines.extend(format_group(g))
    rate = report.total_runs / report.elapsed_s if report.elapsed_s else 0.0
    failed = [f"{g.scenario}×{g.wire}" for g in report.groups if not g.ok]
    lines.append(
        f"== {report.total_runs} runs in {report.elapsed_s:.1f} s ({rate:.1f} runs/s); "
        + ("all invariants held" if report.ok else f"FAILED: {', '.join(failed) or 'no groups'}")
    )
    lines.append(summary_line(report))
    return "\n".join(lines)


def summary_line(report: StressReport) -> str:
    """The suite's one-line summary (the last line of its output; `make stress` repeats it):
    cancellation points run, scenarios × wires, where the cancels landed, violations."""
    points = sum(len(g.runs) for g in report.groups)
    scenarios = len({g.scenario for g in report.groups})
    wires = len({g.wire for g in report.groups})
    counts: Counter[str] = Counter()
    for g in report.groups:
        counts.update(g.phases)
    phases = ", ".join(f"{p} {counts[p]:,}" for p in Phase.ORDER if counts[p])
    violations = sum(len(g.violations) for g in report.groups)
    missing = sum(len(g.missing) for g in report.groups)
    skipped = sum(g.skipped is not None for g in report.groups)
    problems = [f"{violations:,} violation{'s' if violations != 1 else ''}"]
    if missing:
        problems.append(f"{missing} required phase(s) without a cancel")
    if skipped:
        problems.append(f"{skipped} group(s) skipped")
    rate = points / report.elapsed_s if report.elapsed_s else 0.0
    return (
        f"cancel: {points:,} points over {scenarios} scenarios × {wires} wires in "
        f"{report.elapsed_s:.0f} s ({rate:.1f}/s), phases: {phases or 'none'}; "
        + "; ".join(problems)
    )
