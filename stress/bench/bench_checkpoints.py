"""Checkpoint snapshots of a big tree (docs/benchmarks.md, "Checkpoints").

Method: a project of 5,000 files (sizes 200 B to 8 kB, seeded, in 50 folders) in a
temporary directory on the same file system as the store; each run uses a fresh store
(`CheckpointStore` under another temporary directory), so every blob is new and written
durably.

- **Cold snapshot**: `TurnCheckpoints.before_call` for a `bash` call in a new session, on
  an empty store — the walk, reading every file, and writing 5,000 blobs durably. This is
  the cost the first `bash` call of a session pays.
- **Turn end after a `bash` call that changed 500 files**: `after_call` (the walk again,
  500 new blobs) and `end_turn` (the "after" versions, line counts, the change set's
  record, the size cap), as the loop runs them.
- **Warm snapshot**: `before_call` again in the same session, nothing changed (the cache
  answers; no blob is written).

Each figure is reported twice: wall-clock time (noisy on a loaded machine) and the
process's CPU time (`time.process_time`, all threads). The durable writes (fsync) wait on
the disk, so they show in wall time, not in CPU time. `runs` is the number of
repetitions (median reported). Nothing fails on timing.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Final

import trio

from rawtrio.checkpoints.capture import TurnCheckpoints
from rawtrio.checkpoints.store import CheckpointStore
from stress.bench.common import Figure, Options, median

DEFAULT_RUNS: Final = 5
SMOKE_RUNS: Final = 1


def make_tree(root: Path, files: int, seed: int = 1) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for i in range(files):
        folder = root / f"d{i % 50:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        p = folder / f"f{i:05d}.txt"
        p.write_bytes(rng.randbytes(rng.randint(200, 8000)))
        paths.append(p)
    return paths


async def timed(fn: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """(wall ms, CPU ms) of awaiting `fn()`."""
    wall, cpu = time.perf_counter(), time.process_time()
    await fn()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


async def bash_call(cp: TurnCheckpoints, turn: str) -> None:
    await cp.before_call(turn, "bash", {}, read_only=False)


async def turn_end(cp: TurnCheckpoints, turn: str) -> None:
    await cp.after_call()
    await cp.end_turn(turn, "change", cancelled=False)


async def run(options: Options) -> list[Figure]:
    files = options.size(5000, 200)
    changed = files // 10
    cold: list[tuple[float, float]] = []
    ends: list[tuple[float, float]] = []
    warm: list[tuple[float, float]] = []
    base = Path(tempfile.mkdtemp(prefix="bench-ckpt-"))
    try:
        project = base / "project"
        paths = make_tree(project, files)
        for n in range(options.runs):
            state = base / f"state-{n}"
            cp = TurnCheckpoints(CheckpointStore(state, project), f"s{n}")
            turn = f"t{n}"
            cold.append(await timed(partial(bash_call, cp, turn)))
            for p in paths[:changed]:
                p.write_bytes(p.read_bytes() + f"run {n}\n".encode())
            ends.append(await timed(partial(turn_end, cp, turn)))
            warm.append(await timed(partial(bash_call, cp, "w")))
            await cp.after_call()
            await trio.to_thread.run_sync(shutil.rmtree, state)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    note = f"{files} files, median of {options.runs}"
    out: list[Figure] = []
    for label, values in (
        (f"cold snapshot of {files} files", cold),
        (f"turn end, {changed} files changed", ends),
        (f"warm snapshot of {files} files", warm),
    ):
        out.append(
            Figure.against(f"{label} (wall)", median([v[0] for v in values]), "ms", None, note)
        )
        out.append(
            Figure.against(f"{label} (CPU)", median([v[1] for v in values]), "ms", None, note)
        )
    return out
