"""Benchmarks for the tools (figures only; nothing fails on timing).

`python -m stress.bench.bench_tools` builds a 50,000-file tree and reports:

- grep over it: rawtrio's `grep` tool vs `rg` (skipped, and said so, when missing) vs
  `grep -r`, same pattern, same tree;
- cancel latency of `bash`: from cancel to the handler's return with the group reaped, for
  a cooperative command and one that ignores SIGTERM (which costs the grace period).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from rawtrio.frozen import freeze
from rawtrio.tools.base import ToolContext, ToolSettings
from rawtrio.tools.bash import bash_tool
from rawtrio.tools.grep import grep_tool

FILES = 50_000
PER_DIR = 100
GRACE_S = 0.2


def build_tree(root: Path) -> None:
    for i in range(FILES):
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


async def cancel_latency(command: str, runs: int = 15) -> list[float]:
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


def ms(s: float) -> str:
    return f"{s * 1000:.1f} ms"


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(f"building {FILES} files ...", flush=True)
        build_tree(root)
        tool_s, matches = await grep_tool_time(root)
        print(f"grep tool : {ms(tool_s)} ({matches} matches)")
        if shutil.which("rg"):
            print(f"rg        : {ms(timed(['rg', '-c', 'NEEDLE_42'], root))}")
        else:
            print("rg        : skipped (ripgrep not installed)")
        print(f"grep -r   : {ms(timed(['grep', '-r', '-c', 'NEEDLE_42', '.'], root))}")
    for name, cmd in (
        ("cooperative", "echo ready; sleep 30"),
        ("ignores SIGTERM", "trap '' TERM; echo ready; sleep 30 & wait"),
    ):
        s = await cancel_latency(cmd)
        q = statistics.quantiles(s, n=100)
        print(
            f"cancel latency, {name}: median {ms(statistics.median(s))}, "
            f"p99 {ms(q[98])} (grace {GRACE_S} s)"
        )


if __name__ == "__main__":
    sys.exit(trio.run(main))
