"""What every benchmark module shares: the `Options` it is run with, the `Figure` it
reports and a few statistics.

A figure is one measured number next to its budget. `within` is None when the figure has
no budget of its own (context such as the SDK's import time) or could not be judged.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Options:
    """How a benchmark is run (the argument of its `run` or `main`)."""

    #: Repetitions: `--runs`, else the module's `DEFAULT_RUNS` (`SMOKE_RUNS` under --smoke).
    runs: int
    #: `--smoke`: tiny sizes, to check that the benchmark still runs (CI does, every
    #: module in well under a minute in all); its figures mean nothing then.
    smoke: bool = False

    def size(self, full: int, smoke: int) -> int:
        """A workload size: `full` normally, `smoke` under --smoke."""
        return smoke if self.smoke else full


@dataclass(frozen=True, slots=True)
class Figure:
    #: What was measured, e.g. "cancel -> turn_ended + group reaped (median)".
    name: str
    #: The measured value, in `unit`.
    value: float
    #: "ms", "us", "MB", … — how `value` and `target` are printed.
    unit: str
    #: The budget in `unit` (None: no budget, reported for context).
    target: float | None = None
    #: Whether `value` is within `target`; None when there is no budget to judge by.
    within: bool | None = None
    #: Free text: the number of runs, how the target was derived, caveats.
    note: str = ""

    @staticmethod
    def against(name: str, value: float, unit: str, target: float | None, note: str = "") -> Figure:
        """A figure judged `value <= target` (no judgement when `target` is None)."""
        within = None if target is None else value <= target
        return Figure(name, value, unit, target, within, note)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], p: float) -> float:
    """The `p`-th percentile by the nearest-rank method (p99 of 50 runs is the maximum)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:.0f} {unit}"
    if abs(value) >= 10:
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}"
