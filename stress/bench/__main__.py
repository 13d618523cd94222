"""`python -m stress.bench [--only NAME] [--runs N] [--smoke]`: run the benchmarks, print a table.

Benchmarks report figures against the budgets in docs/benchmarks.md; they never fail on timing.
Exit status: 0 when every benchmark ran (whatever its figures), 1 when one raised (a bug
or a broken environment, not a slow machine), 2 for bad arguments.

`--smoke` runs every benchmark with tiny sizes and few repetitions (CI runs `make bench
ARGS=--smoke` so that the benchmarks stay runnable): the table is printed, but its figures
say nothing about performance.

Plug-in contract — how to add a benchmark:

- Add a module `stress/bench/bench_<name>.py`. It is found by its file name; `--only
  <name>` (or `--only bench_<name>`) runs it alone. Modules run one at a time, in name
  order, each in its own `trio.run` when it is async.
- Expose exactly one of
  - `async def run(options: Options) -> list[Figure]` (run under `trio.run`), or
  - `def main(options: Options) -> list[Figure]` (plain, synchronous).
- `options.runs` is the number of repetitions the user asked for with `--runs`, or else
  the module's `DEFAULT_RUNS: int` (optional; 20 when absent) — under `--smoke` its
  `SMOKE_RUNS: int` (optional; 1 when absent). Interpret it as fits the benchmark (runs
  per figure, or a scale), and say how in the module docstring.
- `options.smoke` asks for tiny workloads: take every size through `options.size(full,
  smoke)`, so that the module runs in a few seconds under `--smoke`.
- Return `Figure`s from `stress.bench.common` (name, value, unit, target, within, note);
  `Figure.against(name, value, unit, target)` judges `value <= target`. Never assert on
  timing; raise only when the benchmark could not measure at all.
- The module's docstring says what it measures and by which method; `docs/benchmarks.md`
  lists the figures measured on the reference machine.
- An entry that still takes `runs: int` (the contract before `Options`) is given
  `options.runs` and cannot shrink its workload under `--smoke`.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
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
from stress.bench.common import Figure, Options, format_value

#: Repetitions for a module that sets no `DEFAULT_RUNS` (`SMOKE_RUNS` under --smoke).
FALLBACK_RUNS = 20
FALLBACK_SMOKE_RUNS = 1
PREFIX = "bench_"


def discover() -> list[str]:
    """The benchmark names (`bench_<name>.py` → `<name>`), sorted."""
    return sorted(
        info.name.removeprefix(PREFIX)
        for info in pkgutil.iter_modules(stress.bench.__path__)
        if info.name.startswith(PREFIX)
    )


def run_module(name: str, runs: int | None, *, smoke: bool = False) -> list[Figure]:
    module = importlib.import_module(f"stress.bench.{PREFIX}{name}")
    count = runs if runs is not None else _default_runs(module, smoke)
    options = Options(runs=count, smoke=smoke)
    entry = getattr(module, "run", None)
    if entry is not None:
        return cast(list[Figure], trio.run(entry, _argument(entry, options)))
    sync_entry = getattr(module, "main", None)
    if sync_entry is None:
        raise TypeError(f"{module.__name__} has neither `async def run` nor `def main`")
    return cast(
        list[Figure], cast(Callable[[Any], Any], sync_entry)(_argument(sync_entry, options))
    )


def _argument(entry: Callable[..., Any], options: Options) -> Options | int:
    """`options`, or `options.runs` for an entry written as `run(runs: int)`."""
    parameters = list(inspect.signature(entry).parameters)
    if len(parameters) != 1:
        raise TypeError(f"{entry.__module__}.{entry.__name__} must take one argument (options)")
    return options.runs if parameters[0] == "runs" else options


def _default_runs(module: ModuleType, smoke: bool) -> int:
    name, fallback = (
        ("SMOKE_RUNS", FALLBACK_SMOKE_RUNS) if smoke else ("DEFAULT_RUNS", FALLBACK_RUNS)
    )
    value = getattr(module, name, fallback)
    return value if isinstance(value, int) and value > 0 else fallback


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
        description="Measure the performance budgets (docs/benchmarks.md) and print the figures.",
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
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes and few runs: check that every benchmark runs (figures mean nothing)",
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
            figures = run_module(name, args.runs, smoke=args.smoke)
        except Exception:
            failed = True
            print(f"benchmark {name} failed:\n{traceback.format_exc()}", file=sys.stderr)
            continue
        print(f"  {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        rows.extend((name, f) for f in figures)
    if args.smoke:
        print("smoke run: tiny sizes, the figures say nothing about performance", flush=True)
    print(format_table(rows), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
