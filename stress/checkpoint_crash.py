"""`python -m stress.checkpoint_crash`: SIGKILL a process while it snapshots, records,
undoes and redoes checkpoints, then check the store and the project tree (docs/stress.md).

A child process (`--child ROOT PROJECT SEED`) runs turns of the real capture code
(`rawtrio.checkpoints.capture.TurnCheckpoints`) as the loop does for a `bash` call, on a
project of a few thousand files: a tree snapshot, a change (files rewritten, created,
deleted, a mode changed), the comparison, the change set's record — then, every other
turn, an undo and a redo of it. It prints each phase as it enters it (`phase snapshot`,
`phase change`, `phase compare`, `phase record`, `phase undo`, `phase redo`, `phase idle`)
and, before the change, the paths it is about to touch.

The parent aims each SIGKILL at a phase, in turn: it waits for the child to enter it, then
kills it at a random point of a duration that phase took before — so kills land
inside blob writes, tree walks, change-set writes and restores. The phase the child was
in when killed is the last one it printed. A "generation" (a fresh store over a fresh
project of `--files` files, whose first snapshot writes every blob) lasts a few kills;
each later kill continues the same store, as a user's next session would.

After each kill, as the next session would open the store:

- every object hashes to its own name (no half-written blob under its name);
- every change-set record parses, and every blob it names exists;
- opening the store (`CheckpointStore.recover`) removes every temporary the killed writer
  left, in the store; none is left;
- a record marked `pending` (an undo or redo the kill cut) is completed by the next undo
  or redo, without a conflict, and leaves no temporary beside the project's files;
- every applied change set, newest first, is undone: refused only for the files the killed
  turn was changing before its record existed (then forced), and each undo puts every
  file of its change set back to its `before`, byte for byte with its mode;
- after all of them, the project tree equals the tree the generation began with, except
  the files the killed turn was changing before it had a record (no recorded change may
  be lost, and nothing may be restored partly without a record saying so);
- redoing them all, oldest first, gives back the tree the kill left (those files aside).

Exit status: 0 when every check held, 1 on a violation, 2 for bad arguments. The last line
is the summary (`checkpoint-crash: N SIGKILLs (S during a snapshot, …), R records
checked, V violations`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rawtrio.checkpoints.model import ChangeSet, Version
from rawtrio.checkpoints.objects import blob_id
from rawtrio.checkpoints.restore import CheckpointError, current, redo, undo
from rawtrio.checkpoints.store import CheckpointStore

SESSION = "crash-session"
PHASES = ("snapshot", "change", "compare", "record", "undo", "redo")
#: Kills aimed at each phase, in turn ("snapshot" twice: the phase the issue names).
AIMS = ("snapshot", "record", "undo", "snapshot", "redo", "change", "compare")
KILLS_PER_GENERATION = 6
#: How long the parent waits for the child to reach the phase it aims at.
REACH_TIMEOUT_S = 20.0


# --- the child -------------------------------------------------------------------------


def make_project(project: Path, files: int, seed: str) -> None:
    rng = random.Random(seed)
    for i in range(files):
        folder = project / f"d{i % 40:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:05d}.txt").write_bytes(rng.randbytes(rng.randint(64, 4096)))
    (project / "new").mkdir()
    (project / ".gitignore").write_text("ignored/\n")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def change_tree(project: Path, rng: random.Random, turn: str) -> None:
    """What the turn's `bash` call does: rewrite 5 % of the files, delete 3, create 5,
    flip a mode — announcing the paths first, so a kill before the record is explained."""
    existing = sorted(p for p in project.glob("d*/*") if p.is_file())
    changed = rng.sample(existing, max(1, len(existing) // 20))
    removed = rng.sample(existing, 3)
    created = [project / "new" / f"{turn}-{i}.txt" for i in range(5)]
    chmod = rng.choice(existing)
    touched = {*changed, *removed, *created, chmod}
    say("touch " + json.dumps(sorted(p.relative_to(project).as_posix() for p in touched)))
    say("phase change")
    for p in changed:
        if p.exists():
            p.write_bytes(p.read_bytes()[:100] + rng.randbytes(rng.randint(10, 3000)))
    for p in removed:
        p.unlink(missing_ok=True)
    for p in created:
        p.write_bytes(rng.randbytes(rng.randint(10, 2000)))
    if chmod.exists():
        chmod.chmod(0o700 if chmod.stat().st_mode & 0o100 == 0 else 0o600)


def child(root: Path, project: Path, seed: str) -> None:
    """Capture turns, undo and redo them, forever (until killed)."""
    import trio

    from rawtrio.checkpoints.capture import TurnCheckpoints

    rng = random.Random(seed)

    async def run() -> None:
        cp = TurnCheckpoints(CheckpointStore(root, project), SESSION)
        while True:
            turn = f"t{os.getpid()}-{rng.randrange(1 << 30)}"
            say("phase snapshot")
            await cp.before_call(turn, "bash", {}, read_only=False)
            change_tree(project, rng, turn)
            say("phase compare")
            await cp.after_call()
            say("phase record")
            await cp.end_turn(turn, f"turn {turn}", cancelled=False)
            say(f"recorded {turn}")
            if rng.random() < 0.5:
                say("phase undo")
                await cp.undo()
                say("phase redo")
                await cp.redo()
            say("phase idle")

    trio.run(run)


# --- the parent ------------------------------------------------------------------------


@dataclass
class Report:
    kills: int = 0
    #: Kills by the phase the child was in.
    during: Counter[str] = field(default_factory=Counter)
    records: int = 0
    resumed: int = 0
    temporaries_swept: int = 0
    violations: list[str] = field(default_factory=list)


@dataclass
class Generation:
    base: Path
    #: The project tree when the generation began (its baseline), as (kind, bytes, mode).
    baseline: dict[str, tuple[str, bytes, int]] = field(default_factory=dict)
    #: Paths killed turns changed before they had a record (not restorable by design).
    unrecorded: set[str] = field(default_factory=set)
    kills: int = 0


def picture(root: Path) -> dict[str, tuple[str, bytes, int]]:
    out: dict[str, tuple[str, bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            rel = p.relative_to(root).as_posix()
            if os.path.isdir(p):
                out[rel] = ("dir", b"", 0)
            else:
                out[rel] = ("file", p.read_bytes(), st.st_mode & 0o777)
    return out


class Child:
    """The child process and its lines, read by a thread with their arrival times."""

    def __init__(self, root: Path, project: Path, seed: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "stress.checkpoint_crash",
                "--child",
                str(root),
                str(project),
                seed,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        self.seen: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line.rstrip("\n")))

    def wait_for(self, line: str, deadline: float) -> bool:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                return False
            try:
                got = self.lines.get(timeout=left)
            except queue.Empty:
                return False
            self.seen.append(got)
            if got[1] == line:
                return True

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._reader.join(5)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def phase(self) -> str:
        phases = [line.split()[1] for _t, line in self.seen if line.startswith("phase ")]
        return phases[-1] if phases else "start"

    def unrecorded(self) -> set[str]:
        """The paths the killed turn was changing, when it was killed before its record."""
        touched: set[str] = set()
        for _t, line in self.seen:
            if line.startswith("touch "):
                touched = set(json.loads(line[len("touch ") :]))
            elif line.startswith("recorded "):
                touched = set()
        return touched

    def durations(self) -> dict[str, list[float]]:
        """How long each phase took, by name; the child's first snapshot (an empty cache:
        every file read, missing blobs written) apart from later ones, since a kill aimed
        at "snapshot" lands in a child's first."""
        out: dict[str, list[float]] = {}
        phase_lines = [(t, line.split()[1]) for t, line in self.seen if line.startswith("phase ")]
        for i, ((t0, name), (t1, _next)) in enumerate(itertools.pairwise(phase_lines)):
            key = name if name != "snapshot" or i == 0 else "later snapshot"
            out.setdefault(key, []).append(t1 - t0)
        return out


def same(path: Path, v: Version | None) -> bool:
    found = current(path)
    if v is None or found is None:
        return found is v
    if v.symlink:
        return found.symlink and found.blob == v.blob
    return found.blob == v.blob and found.mode == v.mode and not found.symlink


def check_store(store: CheckpointStore, report: Report, label: str) -> list[ChangeSet]:
    for blob in store.objects.all():
        data = store.objects.path(blob).read_bytes()
        if blob_id(data) != blob:
            report.violations.append(f"{label}: object {blob} is torn ({len(data)} bytes)")
    for f in store.changesets.glob("*/[0-9]*.json"):
        try:
            json.loads(f.read_text("utf-8"))
        except ValueError:
            report.violations.append(f"{label}: record {f.name} does not parse")
    report.temporaries_swept += store.recover()
    left = store.temporaries()
    if left:
        report.violations.append(f"{label}: {len(left)} temporaries left after opening: {left[:3]}")
    sets = store.change_sets(SESSION)
    report.records += len(sets)
    for cs in sets:
        for fc in cs.files:
            for v in (fc.before, fc.after):
                if v is not None and not store.objects.has(v.blob):
                    report.violations.append(f"{label}: {cs.turn_id} names missing {v.blob}")
    return sets


def check_restores(
    store: CheckpointStore,
    project: Path,
    gen: Generation,
    unrecorded: set[str],
    report: Report,
    label: str,
) -> None:
    sets = store.change_sets(SESSION)
    pending = [c for c in sets if c.pending is not None]
    if len(pending) > 1:
        report.violations.append(f"{label}: {len(pending)} records pending at once")
    if pending:
        cs = pending[-1]
        run = undo if cs.pending == "undo" else redo
        try:
            out = run(store, SESSION)
        except CheckpointError as exc:
            report.violations.append(f"{label}: completing the cut {cs.pending} failed: {exc}")
            return
        if not out.applied or out.resumed != cs.pending or out.change_set.number != cs.number:
            report.violations.append(
                f"{label}: the cut {cs.pending} of {cs.number} was not completed: "
                f"{out.describe(str(cs.pending))}"
            )
            return
        report.resumed += 1
        for fc in cs.files:
            want = fc.before if cs.pending == "undo" else fc.after
            if not same(project / fc.path, want):
                report.violations.append(f"{label}: completed {cs.pending} left {fc.path} wrong")
    leftovers = list(project.rglob("*rawtrio-restore-*"))
    if leftovers:
        report.violations.append(
            f"{label}: restore temporaries left in the project: {leftovers[:3]}"
        )
    killed_state = picture(project)
    undone: list[int] = []
    while True:
        applied = [c for c in store.change_sets(SESSION) if c.state == "applied"]
        if not applied:
            break
        cs = applied[-1]
        out = undo(store, SESSION, cs.number)
        if not out.applied:
            outside = [c.path for c in out.conflicts if c.path not in unrecorded]
            if outside:
                report.violations.append(
                    f"{label}: undo of {cs.number} refused for files no cut explains: {outside[:5]}"
                )
                return
            out = undo(store, SESSION, cs.number, force=True)
        undone.append(cs.number)
        for fc in cs.files:
            if not same(project / fc.path, fc.before):
                report.violations.append(
                    f"{label}: undo of {cs.number} did not restore {fc.path} byte for byte"
                )
    gen.unrecorded |= unrecorded
    now = picture(project)
    for rel in gen.baseline.keys() | now.keys():
        if rel not in gen.unrecorded and gen.baseline.get(rel) != now.get(rel):
            report.violations.append(f"{label}: after undoing all, {rel} differs from the start")
    for _ in undone:
        out = redo(store, SESSION)
        if not out.applied:
            outside = [c.path for c in out.conflicts if c.path not in unrecorded]
            if outside:
                report.violations.append(f"{label}: redo refused for {outside[:5]}")
                return
            redo(store, SESSION, force=True)
    again = picture(project)
    for rel in killed_state.keys() | again.keys():
        if rel not in unrecorded and killed_state.get(rel) != again.get(rel):
            report.violations.append(f"{label}: after redoing all, {rel} differs from the kill's")


def run_once(
    gen: Generation,
    rng: random.Random,
    aim: str,
    estimates: dict[str, list[float]],
    report: Report,
    label: str,
) -> None:
    root, project = gen.base / "cp", gen.base / "project"
    child = Child(root, project, f"{rng.random()}")
    try:
        reached = child.wait_for(f"phase {aim}", time.monotonic() + REACH_TIMEOUT_S)
        if reached:  # a random point of a duration this phase took before
            time.sleep(rng.uniform(0.0, rng.choice(estimates.get(aim) or [0.05])))
    finally:
        child.kill()
    report.kills += 1
    gen.kills += 1
    report.during[child.phase()] += 1
    for name, seen in child.durations().items():
        estimates[name] = (estimates.get(name, []) + seen)[-20:]
    if child.proc.returncode != -signal.SIGKILL:
        report.violations.append(f"{label}: the child ended by itself ({child.proc.returncode})")
    store = CheckpointStore(root, project)
    check_store(store, report, label)
    check_restores(store, project, gen, child.unrecorded(), report, label)


def new_generation(tmp: Path, n: int, files: int, seed: str) -> Generation:
    base = tmp / f"g{n}"
    make_project(base / "project", files, f"{seed}:g{n}")
    return Generation(base, picture(base / "project"))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m stress.checkpoint_crash")
    p.add_argument("--child", nargs=3, metavar=("ROOT", "PROJECT", "SEED"), help=argparse.SUPPRESS)
    p.add_argument("--kills", type=int, default=None, help="stop after this many SIGKILLs")
    p.add_argument(
        "--budget", type=float, default=None, help="seconds (default: 60 without --kills)"
    )
    p.add_argument("--files", type=int, default=3000, help="files in the project (default 3000)")
    p.add_argument("--seed", type=int, default=None, help="random seed (printed)")
    args = p.parse_args(argv)
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]), args.child[2])
        return 0
    if (args.kills is not None and args.kills < 1) or (
        args.budget is not None and args.budget <= 0
    ):
        print("--kills and --budget must be positive", file=sys.stderr)
        return 2
    if args.files < 20:
        print("--files must be at least 20", file=sys.stderr)
        return 2
    budget = args.budget if args.budget is not None else (None if args.kills else 60.0)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"checkpoint-crash: seed {seed}", flush=True)
    report = Report()
    estimates: dict[str, list[float]] = {}
    end = time.monotonic() + budget if budget is not None else None
    with tempfile.TemporaryDirectory(prefix="ckpt-crash-") as tmp:
        gen_n = 0
        gen = new_generation(Path(tmp), gen_n, args.files, str(seed))
        n = 0
        while (args.kills is None or n < args.kills) and (end is None or time.monotonic() < end):
            if gen.kills >= KILLS_PER_GENERATION:
                shutil.rmtree(gen.base)
                gen_n += 1
                gen = new_generation(Path(tmp), gen_n, args.files, str(seed))
            aim = AIMS[n % len(AIMS)]
            run_once(gen, random.Random(f"{seed}:{n}"), aim, estimates, report, f"kill {n} ({aim})")
            n += 1
    for v in report.violations:
        print(f"violation: {v}")
    during = ", ".join(f"{report.during[ph]} during {ph}" for ph in (*PHASES, "idle", "start"))
    print(
        f"checkpoint-crash: {report.kills} SIGKILLs ({report.during['snapshot']} during a "
        f"snapshot; {during}), {report.resumed} cut undo/redo completed, "
        f"{report.temporaries_swept} temporaries swept, {report.records} records checked, "
        f"{len(report.violations)} violations",
        flush=True,
    )
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
