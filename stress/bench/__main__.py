"""`python -m stress.bench [--only NAME] [--runs N]`: run the benchmarks, print a table.

Benchmarks report figures against the budgets of DESIGN.md §7; they never fail on timing.
Exit status: 0 when every benchmark ran (whatever its figures), 1 when one raised (a bug
or a broken environment, not a slow machine), 2 for bad arguments.

Plug-in contract — how to add a benchmark:

- Add a module `stress/bench/bench_<name>.py`. It is found by its file name; `--only
  <name>` (or `--only bench_<name>`) runs it alone. Modules run one at a time, in name
  order, each in its own `trio.run` when it is async.
- Expose exactly one of
  - `async def run(runs: int) -> list[Figure]` (run under `trio.run`), or
  - `def main(runs: int) -> list[Figure]` (plain, synchronous).
- `runs` is the number of repetitions the user asked for with `--runs`, or else the
  module's `DEFAULT_RUNS: int` (optional; 20 when absent). Interpret it as fits the
  benchmark (runs per figure, or a scale), and say how in the module docstring.
- Return `Figure`s from `stress.bench.common` (name, value, unit, target, within, note);
  `Figure.against(name, value, unit, target)` judges `value <= target`. Never assert on
  timing; raise only when the benchmark could not measure at all.
- The module's docstring says what it measures and by which method; `docs/benchmarks.md`
  lists the figures measured on the reference machine.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, cast

import trio

import stress.bench
from stress.bench.common import Figure, format_value

#: Repetitions for a module that sets no `DEFAULT_RUNS`.
FALLBACK_RUNS = 20
PREFIX = "bench_"


def discover() -> list[str]:
    """The benchmark names (`bench_<name>.py` → `<name>`), sorted."""
    return sorted(
        info.name.removeprefix(PREFIX)
        for info in pkgutil.iter_modules(stress.bench.__path__)
        if info.name.startswith(PREFIX)
    )


def run_module(name: str, runs: int | None) -> list[Figure]:
    module = importlib.import_module(f"stress.bench.{PREFIX}{name}")
    count = runs if runs is not None else _default_runs(module)
    entry = getattr(module, "run", None)
    if entry is not None:
        async_entry = cast(Callable[[int], Any], entry)
        return cast(list[Figure], trio.run(async_entry, count))
    sync_entry = getattr(module, "main", None)
    if sync_entry is None:
        raise TypeError(f"{module.__name__} has neither `async def run` nor `def main`")
    return cast(list[Figure], cast(Callable[[int], Any], sync_entry)(count))


def _default_runs(module: ModuleType) -> int:
    value = getattr(module, "DEFAULT_RUNS", FALLBACK_RUNS)
    return value if isinstance(value, int) and value > 0 else FALLBACK_RUNS


def format_table(rows: Sequence[tuple[str, Figure]]) -> str:
    header = ("benchmark", "figure", "value", "target", "within")
    lines = [header]
    for bench, f in rows:
        verdict = "-" if f.within is None else ("yes" if f.within else "NO")
        target = "-" if f.target is None else f"<= {format_value(f.target, f.unit)}"
        lines.append((bench, f.name, format_value(f.value, f.unit), target, verdict))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    ]
    out.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {bench} / {f.name}: {f.note}" for bench, f in rows if f.note]
    if notes:
        out += ["", "notes:", *notes]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    names = discover()
    parser = argparse.ArgumentParser(
        prog="python -m stress.bench",
        description="Measure the performance budgets of DESIGN.md §7 and print the figures.",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(names)}",
    )
    parser.add_argument(
        "--runs", type=int, metavar="N", help="repetitions per figure (default: per benchmark)"
    )
    args = parser.parse_args(argv)
    chosen = [n.removeprefix(PREFIX) for n in args.only] if args.only else names
    unknown = [n for n in chosen if n not in names]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(names)}")
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be positive")
    # The OpenAI SDK's streams leave exhausted async generators to the GC (STACK-NOTES.md).
    warnings.filterwarnings(
        "ignore", message="Async generator .* was garbage collected", category=ResourceWarning
    )
    rows: list[tuple[str, Figure]] = []
    failed = False
    for name in chosen:
        started = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            figures = run_module(name, args.runs)
        except Exception:
            failed = True
            print(f"benchmark {name} failed:\n{traceback.format_exc()}", file=sys.stderr)
            continue
        print(f"  {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        rows.extend((name, f) for f in figures)
    print(format_table(rows), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
