"""`python -m stress`: the cancellation stress suite (see `docs/stress.md`).

Exit status: 0 when every invariant held and every required phase got a cancel; 1
otherwise; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from stress.harness import StressOptions, quiet_warnings, run_parallel
from stress.report import format_report
from stress.scenarios import SCENARIOS, WIRES


def parse_args(argv: Sequence[str] | None = None) -> tuple[int, StressOptions]:
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
    parser.add_argument(
        "--procs",
        type=int,
        default=None,
        help="processes sharing the groups, each with the whole budget (default: the CPU "
        "count, at most 2)",
    )
    args = parser.parse_args(argv)
    if args.budget <= 0 or args.jobs < 1 or (args.max_ks is not None and args.max_ks < 1):
        parser.error("--budget, --jobs and --max-ks must be positive")
    if args.procs is not None and args.procs < 1:
        parser.error("--procs must be positive")
    return args.procs or min(2, os.cpu_count() or 1), StressOptions(
        budget_s=args.budget,
        seed=args.seed,
        scenarios=tuple(args.scenario or SCENARIOS),
        wires=tuple(args.wire or WIRES),
        jobs=args.jobs,
        max_ks=args.max_ks,
    )


def main(argv: Sequence[str] | None = None) -> int:
    procs, options = parse_args(argv)
    quiet_warnings()
    report = run_parallel(options, procs)
    print(format_report(report), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
