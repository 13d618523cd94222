"""`python -m stress`: the cancellation stress suite (see `docs/stress.md`).

Exit status: 0 when every invariant held and every required phase got a cancel; 1
otherwise; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from functools import partial

import trio

from stress.harness import StressOptions, run_stress
from stress.report import format_report
from stress.scenarios import SCENARIOS, WIRES


def parse_args(argv: Sequence[str] | None = None) -> StressOptions:
    parser = argparse.ArgumentParser(
        prog="python -m stress",
        description="Cancel a turn at every scheduling point and check invariants I1-I5.",
    )
    parser.add_argument(
        "--budget", type=float, default=180.0, help="seconds for the whole run (default 180)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the k sample (default 1)")
    parser.add_argument(
        "--scenario", action="append", choices=sorted(SCENARIOS), help="repeatable; default all"
    )
    parser.add_argument("--wire", action="append", choices=WIRES, help="repeatable; default all")
    parser.add_argument("--jobs", type=int, default=4, help="runs at the same time (default 4)")
    parser.add_argument(
        "--max-ks", type=int, default=None, help="at most this many k per scenario × wire"
    )
    args = parser.parse_args(argv)
    if args.budget <= 0 or args.jobs < 1 or (args.max_ks is not None and args.max_ks < 1):
        parser.error("--budget, --jobs and --max-ks must be positive")
    return StressOptions(
        budget_s=args.budget,
        seed=args.seed,
        scenarios=tuple(args.scenario or SCENARIOS),
        wires=tuple(args.wire or WIRES),
        jobs=args.jobs,
        max_ks=args.max_ks,
    )


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    # The OpenAI SDK's streams leave exhausted async generators to the GC (STACK-NOTES.md).
    warnings.filterwarnings(
        "ignore",
        message="Async generator .* was garbage collected",
        category=ResourceWarning,
    )
    report = trio.run(partial(run_stress, options))
    print(format_report(report), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
