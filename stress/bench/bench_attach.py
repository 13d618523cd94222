"""An attached headless turn: `rawtrio -p` run by a warm host (`rawtrio serve`) against a
local run of the same turn (`--no-attach`).

The turn is the same one-tool turn for both (the fake model asks for `bash: echo
tool-output`, then answers), on the Anthropic wire, approved with `--yes`. A host is started
for a throwaway state directory (`rawtrio serve --detach`), warmed by one attached run (its
first session imports the provider SDK), and stopped at the end (`rawtrio serve --stop`).
Attached and local runs alternate, `runs` times each, so a change of the machine's load hits
both alike; each is timed from spawn to exit by the same spawner as `bench_startup`
(stdout to /dev/null). Figures:

- **attached one-tool turn (median)** — wall time of `rawtrio -p` attached to the host.
  Target 200 ms (docs/benchmarks.md; Codex CLI measured 350 ms on the same turn).
- **local one-tool turn (median)** — the same with `--no-attach`, for comparison.
- **the attached client's CPU time (median)** — user + system time of the attached
  `rawtrio -p` process (`wait4`). On a loaded machine the wall time is mostly waiting for
  a core; this is what the client itself costs (on a quiet machine the attached turn's wall
  time is this plus the host's share).
- **the host's CPU time per attached turn** — the host process's user + system time
  (`/proc/PID/stat`, all its threads) from before the first measured run to half a second
  after the last, divided by the number of attached runs (the local runs in between do not
  reach it).

The runs' working directory is a project folder of its own, with the state directory
beside it, not in it: a turn that changes files checkpoints its working directory, and
with the store inside it each turn would checkpoint the store's own files (~130 ms of the
host's CPU per turn, measured).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Final

import trio

from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from stress.bench.bench_startup import headless_env, rawtrio_command, spawn
from stress.bench.common import Figure, Options, median

DEFAULT_RUNS: Final = 20
SMOKE_RUNS: Final = 1
ATTACHED_TARGET_MS: Final = 200.0
RUN_LIMIT_S: Final = 120.0

SCENARIO: Final = {
    "rules": [
        {
            "match": "*",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo tool-output"}}]},
                {"text": "The tool said tool-output."},
            ],
        }
    ]
}
PROMPT: Final = ("-p", "use a tool", "--yes")


async def serve(env: dict[str, str], cwd: Path, *args: str) -> None:
    done = await trio.run_process(
        [*rawtrio_command(), "serve", *args],
        env=env,
        cwd=cwd,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"rawtrio serve {' '.join(args)} exited {done.returncode}:\n{stderr}")


async def host_pid(env: dict[str, str], cwd: Path) -> int:
    done = await trio.run_process(
        [*rawtrio_command(), "serve", "--status"], env=env, cwd=cwd, capture_stdout=True
    )
    return int(json.loads(done.stdout)["registration"]["pid"])


def cpu_ms(pid: int) -> float:
    """User + system time of a process and all its threads so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def run(options: Options) -> list[Figure]:
    runs = options.runs
    attached_ms: list[float] = []
    attached_cpu_ms: list[float] = []
    local_ms: list[float] = []
    host_ms = math.nan
    with (
        tempfile.TemporaryDirectory(prefix="rt-bench-", dir="/tmp") as tmp,
        trio.fail_after(RUN_LIMIT_S + 20 * runs),
    ):
        cwd = Path(tmp) / "project"
        cwd.mkdir()
        async with open_fake_model_server(Scenario.from_dict(SCENARIO)) as server:
            env = headless_env(server)
            # Beside the project (a short socket path), not in it: see the module docstring.
            env["RAWTRIO_STATE_DIR"] = str(Path(tmp) / "state")
            await serve(env, cwd, "--detach", "--idle-exit", "600")
            try:
                await spawn([*rawtrio_command(), *PROMPT, "--attach"], 1, env, cwd)  # warm
                pid = await host_pid(env, cwd)
                host_before = cpu_ms(pid)
                for _ in range(runs):
                    attached = await spawn([*rawtrio_command(), *PROMPT, "--attach"], 1, env, cwd)
                    attached_ms += attached.walls_ms
                    attached_cpu_ms += attached.cpus_ms
                    local = await spawn([*rawtrio_command(), *PROMPT, "--no-attach"], 1, env, cwd)
                    local_ms += local.walls_ms
                await trio.sleep(0.5)  # the last session's close
                host_ms = cpu_ms(pid) - host_before
            finally:
                with trio.move_on_after(30) as cleanup:
                    cleanup.shield = True
                    await serve(env, cwd, "--stop")
    note = f"median of {runs} runs; min {{:.0f}}, max {{:.0f}} ms"
    return [
        Figure.against(
            "rawtrio -p one-tool turn, attached to a warm host",
            median(attached_ms),
            "ms",
            ATTACHED_TARGET_MS,
            note.format(min(attached_ms), max(attached_ms)),
        ),
        Figure.against(
            "rawtrio -p one-tool turn, --no-attach (local)",
            median(local_ms),
            "ms",
            None,
            note.format(min(local_ms), max(local_ms))
            + f"; attached/local = {median(attached_ms) / median(local_ms):.2f}",
        ),
        Figure.against(
            "rawtrio -p attached: the client's CPU time (user + sys)",
            median(attached_cpu_ms),
            "ms",
            None,
            note.format(min(attached_cpu_ms), max(attached_cpu_ms)),
        ),
        Figure.against(
            "rawtrio -p attached: the host's CPU time per turn (user + sys)",
            host_ms / runs,
            "ms",
            None,
            f"mean of {runs} runs, all the host's threads",
        ),
    ]
