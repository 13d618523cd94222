"""`python -m stress.checkpoint_crash`: SIGKILL a process while it snapshots, then check
that the checkpoint store holds nothing half-written (docs/stress.md).

A child process (`--child ROOT PROJECT`) runs turns of the real capture code
(`rawtrio.checkpoints.capture.TurnCheckpoints`) as the loop does for a `bash` call — a
tree snapshot, a change to many files, the comparison, the change-set record — over and
over, announcing each turn on stdout. After a seeded random delay from its first line,
the parent sends it SIGKILL, so kills land inside blob writes, tree walks and record
writes. Then it checks:

- every object in `objects/` hashes to its own name (no torn blob);
- every change-set record parses, and every blob it names exists (records are written
  after their blobs);
- `sweep_temporaries` leaves no `tmp-*` file behind;
- undoing the last recorded change set either works or is refused as a conflict (the kill
  may have cut the tree change after the record): never a crash, never a damaged object.

Exit status: 0 when every check held, 1 on a violation, 2 for bad arguments. The last line
is the summary (`checkpoint-crash: N SIGKILLs, R records, V violations`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rawtrio.checkpoints.objects import blob_id
from rawtrio.checkpoints.restore import CheckpointError, undo
from rawtrio.checkpoints.store import CheckpointStore

FILES = 40
FILE_BYTES = 256 * 1024


def child(root: Path, project: Path) -> None:
    """Capture turns forever (until killed)."""
    import trio

    from rawtrio.checkpoints.capture import TurnCheckpoints

    async def run() -> None:
        cp = TurnCheckpoints(CheckpointStore(root, project), "crash-session")
        n = 0
        while True:
            n += 1
            turn = f"t{n}"
            await cp.before_call(turn, "bash", {}, read_only=False)
            for i in range(FILES):
                (project / f"f{i}.txt").write_bytes(os.urandom(FILE_BYTES) + f"{n}\n".encode())
            await cp.after_call()
            await cp.end_turn(turn, f"turn {n}", cancelled=False)
            print(f"recorded {turn}", flush=True)

    trio.run(run)


@dataclass
class Report:
    kills: int = 0
    records: int = 0
    violations: list[str] = field(default_factory=list)


def check(root: Path, project: Path, report: Report, label: str) -> None:
    store = CheckpointStore(root, project)
    for blob in store.objects.all():
        data = store.objects.path(blob).read_bytes()
        if blob_id(data) != blob:
            report.violations.append(f"{label}: object {blob} is torn ({len(data)} bytes)")
    for f in store.changesets.glob("*/*.json"):
        try:
            json.loads(f.read_text("utf-8"))
        except ValueError:
            report.violations.append(f"{label}: record {f.name} does not parse")
    sets = store.change_sets()
    report.records = len(sets)
    for cs in sets:
        for fc in cs.files:
            for v in (fc.before, fc.after):
                if v is not None and not store.objects.has(v.blob):
                    report.violations.append(f"{label}: {cs.turn_id} names missing {v.blob}")
    store.objects.sweep_temporaries()
    left = list(store.objects.root.glob("*/tmp-*"))
    if left:
        report.violations.append(f"{label}: {len(left)} temporaries left after the sweep")
    if sets:
        try:
            undo(store)
        except CheckpointError as exc:
            report.violations.append(f"{label}: undo failed: {exc}")


def run_once(base: Path, rng: random.Random, report: Report, label: str) -> None:
    root, project = base / "cp", base / "project"
    project.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "stress.checkpoint_crash", "--child", str(root), str(project)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # one turn recorded: the store exists
        time.sleep(rng.uniform(0.0, 0.4))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    report.kills += 1
    check(root, project, report, label)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m stress.checkpoint_crash")
    p.add_argument("--child", nargs=2, metavar=("ROOT", "PROJECT"), help=argparse.SUPPRESS)
    p.add_argument("--kills", type=int, default=10, help="SIGKILLs (default 10)")
    p.add_argument("--seed", type=int, default=None, help="random seed (printed)")
    args = p.parse_args(argv)
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]))
        return 0
    if args.kills < 1:
        print("--kills must be at least 1", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"checkpoint-crash: seed {seed}")
    report = Report()
    with tempfile.TemporaryDirectory(prefix="ckpt-crash-") as tmp:
        for run in range(args.kills):
            run_once(Path(tmp), random.Random(f"{seed}:{run}"), report, f"run {run}")
    for v in report.violations:
        print(f"violation: {v}")
    print(
        f"checkpoint-crash: {report.kills} SIGKILLs, {report.records} records, "
        f"{len(report.violations)} violations"
    )
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
