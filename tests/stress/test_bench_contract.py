"""The benchmark runner's plug-in contract: every `stress/bench/bench_*.py` module exposes
one entry the runner can call, and `--smoke` reaches it. (CI runs `make bench
ARGS=--smoke`, which runs them all; these tests only check the wiring, fast.)"""

from __future__ import annotations

import importlib
import inspect

import pytest

from stress.bench import __main__ as bench
from stress.bench.common import Figure, Options


@pytest.mark.parametrize("name", bench.discover())
def test_every_benchmark_takes_the_options(name: str) -> None:
    module = importlib.import_module(f"stress.bench.bench_{name}")
    entry = getattr(module, "run", None) or getattr(module, "main", None)
    assert entry is not None, f"{module.__name__} has neither run nor main"
    assert list(inspect.signature(entry).parameters) == ["options"]


def test_the_runner_passes_smoke_and_the_smoke_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Options] = []

    async def run(options: Options) -> list[Figure]:
        seen.append(options)
        return [Figure.against("x", 1.0, "ms", None)]

    module = importlib.import_module("stress.bench.bench_tools")
    monkeypatch.setattr(module, "run", run)
    assert bench.run_module("tools", None, smoke=True) == [Figure("x", 1.0, "ms")]
    assert bench.run_module("tools", 3) == [Figure("x", 1.0, "ms")]
    assert seen == [Options(runs=module.SMOKE_RUNS, smoke=True), Options(runs=3, smoke=False)]


def test_an_entry_written_for_runs_still_gets_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def main(runs: int) -> list[Figure]:
        seen.append(runs)
        return []

    module = importlib.import_module("stress.bench.bench_tools")
    monkeypatch.delattr(module, "run")
    monkeypatch.setattr(module, "main", main, raising=False)
    bench.run_module("tools", None, smoke=True)
    assert seen == [module.SMOKE_RUNS]
