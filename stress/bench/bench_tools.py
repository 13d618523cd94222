"""The tools: `grep` over a big tree, and how fast a cancelled `bash` is reaped.

Method: a tree of `FILES` small Python files (`PER_DIR` per folder) in a temporary folder,
one in 997 holding the word searched for.

- **grep over the tree**: rawtrio's `grep` tool (count mode) once, then `rg -c` (when
  installed; said so otherwise) and `grep -r -c` with the same pattern on the same tree,
  for comparison. One run each (the page cache is warm after building the tree).
- **cancel latency of `bash`**: from the cancel of the handler's scope, taken once the
  command printed "ready", to the handler's return with its process group reaped — for a
  command that exits on SIGTERM and one that ignores it (which costs the grace period,
  `GRACE_S`, then SIGKILL). Median and p99 of `runs` cancels each.

`--smoke` builds 500 files instead of 50,000.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Final

import trio

from rawtrio.frozen import freeze
from rawtrio.tools.base import ToolContext
from rawtrio.tools.bash import bash_tool
from rawtrio.tools.grep import grep_tool
from rawtrio.tools.settings import ToolSettings
from stress.bench.common import Figure, Options, median, percentile

DEFAULT_RUNS: Final = 15
SMOKE_RUNS: Final = 2
FILES: Final = 50_000
PER_DIR: Final = 100
GRACE_S: Final = 0.2


def build_tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"d{i // PER_DIR // 20}" / f"s{i // PER_DIR}"
        if i % PER_DIR == 0:
            d.mkdir(parents=True, exist_ok=True)
        needle = "NEEDLE_42\n" if i % 997 == 0 else ""
        (d / f"f{i}.py").write_text(f"def f{i}():\n    return {i}\n" * 10 + needle)


def timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


async def grep_tool_time(root: Path) -> tuple[float, int]:
    ctx = ToolContext(session_id="bench", call_id="c", cwd=root, settings=ToolSettings())
    start = time.perf_counter()
    out = await grep_tool().handler(ctx, freeze({"pattern": "NEEDLE_42", "mode": "count"}))
    return time.perf_counter() - start, int(out.details["matches"])


async def cancel_latency(command: str, runs: int) -> list[float]:
    settings = ToolSettings(sigterm_grace_s=GRACE_S)
    samples = []
    for n in range(runs):
        ready = trio.Event()

        def on_output(text: str, ready: trio.Event = ready) -> None:
            if "ready" in text:
                ready.set()

        ctx = ToolContext(
            session_id="bench",
            call_id=f"c{n}",
            cwd=Path.cwd(),
            settings=settings,
            emit_output=on_output,
        )
        cancelled_at = 0.0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(bash_tool().handler, ctx, freeze({"command": command}))
            await ready.wait()
            cancelled_at = time.perf_counter()
            nursery.cancel_scope.cancel(reason="bench")
        samples.append(time.perf_counter() - cancelled_at)
    return samples


async def run(options: Options) -> list[Figure]:
    files = options.size(FILES, 500)
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="rawtrio-bench-tools-") as tmp:
        root = Path(tmp)
        build_tree(root, files)
        tool_s, matches = await grep_tool_time(root)
        note = f"{files:,} files, {matches} matches"
        figures.append(Figure.against("grep tool over the tree", tool_s * 1000, "ms", None, note))
        if shutil.which("rg"):
            rg_s = timed(["rg", "-c", "NEEDLE_42"], root)
            figures.append(Figure.against("rg -c, same tree", rg_s * 1000, "ms", None))
        else:
            figures.append(
                Figure("rg -c, same tree", float("nan"), "ms", note="ripgrep not installed")
            )
        grep_s = timed(["grep", "-r", "-c", "NEEDLE_42", "."], root)
        figures.append(Figure.against("grep -r -c, same tree", grep_s * 1000, "ms", None))
    for name, cmd, grace in (
        ("exits on SIGTERM", "echo ready; sleep 30", 0.0),
        ("ignores SIGTERM", "trap '' TERM; echo ready; sleep 30 & wait", GRACE_S),
    ):
        samples = [(s - grace) * 1000 for s in await cancel_latency(cmd, options.runs)]
        label = f"bash cancel -> reaped, {name}" + (", x in grace + x" if grace else "")
        note = f"{options.runs} cancels; grace {GRACE_S} s"
        figures.append(Figure.against(f"{label} (median)", median(samples), "ms", None, note))
        figures.append(Figure.against(f"{label} (p99)", percentile(samples, 99), "ms", None))
    return figures


if __name__ == "__main__":
    from stress.bench.__main__ import format_table

    print(format_table([("tools", f) for f in trio.run(run, Options(runs=DEFAULT_RUNS))]))
