"""Start-up costs: `rawtrio --version`, the first HTTP request of a headless run, its RSS.

Every command is started by a small wrapper process (`SPAWNER`): it takes a CLOCK_MONOTONIC
stamp, `posix_spawn`s the command (stdin from and stdout to /dev/null: `-p PROMPT` would
wait for input on an inherited pipe), waits for it and records the wall time, so the
figures do not include this benchmark's own scheduling. Figures:

- **`rawtrio --version`** — wall time of the installed console script, median of `runs`.
  Target 50 ms (docs/benchmarks.md). `python -c pass` is reported alongside: the interpreter's
  own start-up, which no code of ours can remove.
- **SDK import** — wall time of `python -c "import anthropic, os; os._exit(0)"`, median
  of `runs`: the interpreter plus the SDK, the floor of any headless run (`os._exit`
  skips the interpreter's teardown, which the first-request figure does not include).
- **First HTTP request of `rawtrio -p`** — from the spawn stamp to the moment the
  in-process fake model server recorded the request (a watcher task stamps CLOCK_MONOTONIC
  as each request is recorded; both clocks are the same system clock). The run is a real
  headless turn on the Anthropic wire (`ANTHROPIC_BASE_URL` points at the fake server).
  Target: the SDK import figure above + 150 ms. The interpreter's start-up is in both, so
  the 150 ms is rawtrio's own share (runtime imports, parsing, session set-up, SDK client).
  SDK imports and headless runs alternate, so a change in the machine's load hits both;
  the note gives the median of the per-pair differences (rawtrio's own share).
- **`rawtrio -p`: own work before the SDK import** — rawtrio's work from the moment the
  interpreter is ready (site done) until the provider SDK's import begins: its own
  imports (trio included), argument parsing, configuration, the store, the session. Each
  headless run gets a `sitecustomize` (`STAMP_SITE`, through `PYTHONPATH`) that stamps
  CLOCK_MONOTONIC when it is imported (the end of the interpreter's start-up) and again
  when the first `anthropic` or `openai` import is looked up, and writes both to a file;
  the figure is the difference, median of `runs`. Target 150 ms. Unlike the per-pair
  difference above, it holds no interpreter start-up, no SDK client set-up and nothing
  after the import.
- **Peak RSS of a headless one-turn run** — `resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`
  in the wrapper after it waited for the headless run; the largest of `runs` runs.
  Target 110 MB.

Headless runs use `--no-attach` when the installed `rawtrio` has it (a local run, never a
warm host's). Measured commands run with bytecode caches written and used (the
benchmark's own `PYTHONDONTWRITEBYTECODE` is not passed on, and a warm-up run fills the
caches), as after any install: a source tree compiled afresh on every start would add
half a second or more of rawtrio's own compiling to every figure.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server
from stress.bench.common import Figure, Options, median

DEFAULT_RUNS: Final = 10
SMOKE_RUNS: Final = 1
VERSION_TARGET_MS: Final = 50.0
FIRST_REQUEST_EXTRA_MS: Final = 150.0
BEFORE_SDK_TARGET_MS: Final = 150.0
RSS_TARGET_MB: Final = 110.0
RUN_LIMIT_S: Final = 60.0

#: Exits without the interpreter's teardown, which the headless figure (stopped at the
#: request) does not include either; tearing down the SDK's thousands of modules is slow.
SDK_IMPORT: Final = "import anthropic, os; os._exit(0)"

#: Runs `argv` `n` times; prints JSON: per run its start stamp, wall time, CPU time (user +
#: sys, of the command and the children it waited for) and exit code, and the peak RSS
#: (KiB) of all the runs.
SPAWNER: Final = """\
import json, os, resource, sys, time
n, argv = int(sys.argv[1]), sys.argv[2:]
quiet = [
    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
]
runs = []
for _ in range(n):
    start = time.monotonic()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=quiet)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    runs.append({"start": start, "wall": wall, "cpu": cpu, "code": code})
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"runs": runs, "maxrss_kib": peak}))
"""


#: Imported by the interpreter's `site` before the command's own code runs (through
#: `PYTHONPATH`): stamps that moment and the first lookup of a provider SDK, into the file
#: `$RAWTRIO_BENCH_STAMPS` ("<ready> <sdk import>", CLOCK_MONOTONIC seconds).
STAMP_SITE: Final = """\
import os, sys, time
_ready = time.monotonic()
class _SdkImportStamp:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in ("anthropic", "openai"):
            sys.meta_path.remove(cls)
            with open(os.environ["RAWTRIO_BENCH_STAMPS"], "w") as f:
                f.write(f"{_ready} {time.monotonic()}")
        return None
if os.environ.get("RAWTRIO_BENCH_STAMPS"):
    sys.meta_path.insert(0, _SdkImportStamp)
"""


@dataclass(frozen=True, slots=True)
class Spawned:
    starts: list[float]
    walls_ms: list[float]
    #: User + system CPU time of each run (`wait4`): steadier than the wall time on a
    #: loaded machine, where a run mostly waits for a core.
    cpus_ms: list[float]
    maxrss_mb: float


def rawtrio_command() -> list[str]:
    script = Path(sys.executable).parent / "rawtrio"
    if script.exists():
        return [str(script)]
    found = shutil.which("rawtrio")
    return [found] if found else [sys.executable, "-m", "rawtrio"]


async def spawn(argv: list[str], runs: int, env: dict[str, str], cwd: Path) -> Spawned:
    done = await trio.run_process(
        [sys.executable, "-c", SPAWNER, str(runs), *argv],
        capture_stdout=True,
        capture_stderr=True,
        env=env,
        cwd=cwd,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    failed = [r["code"] for r in data["runs"] if r["code"] != 0]
    if failed:
        stderr = done.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{argv} exited with {failed}; stderr:\n{stderr}")
    return Spawned(
        starts=[r["start"] for r in data["runs"]],
        walls_ms=[r["wall"] * 1000 for r in data["runs"]],
        cpus_ms=[r["cpu"] * 1000 for r in data["runs"]],
        maxrss_mb=data["maxrss_kib"] / 1024,
    )


def headless_env(server: FakeModelServer) -> dict[str, str]:
    """The environment of a measured run: the fake server, and a throwaway state and
    config directory, so benchmark sessions never land in the user's own database."""
    prefixes = ("ANTHROPIC_", "OPENAI_", "RAWTRIO_", "XDG_")
    env = {k: v for k, v in bytecode_env().items() if not k.startswith(prefixes)}
    scratch = tempfile.mkdtemp(prefix="rawtrio-bench-")
    hook = Path(scratch) / "site"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(STAMP_SITE)
    env.update(
        ANTHROPIC_API_KEY="test-key",
        ANTHROPIC_BASE_URL=server.base_url,
        RAWTRIO_PROVIDER="anthropic",
        RAWTRIO_MODEL="test-model",
        RAWTRIO_STATE_DIR=str(Path(scratch) / "state"),
        XDG_CONFIG_HOME=str(Path(scratch) / "config"),
        XDG_RUNTIME_DIR=str(Path(scratch) / "run"),
        PYTHONPATH=os.pathsep.join([str(hook), *filter(None, [env.get("PYTHONPATH")])]),
        RAWTRIO_BENCH_STAMPS=str(Path(scratch) / "stamps"),
    )
    return env


def bytecode_env() -> dict[str, str]:
    """This process's environment without `PYTHONDONTWRITEBYTECODE`: measured commands
    write and use bytecode caches, as an installed program does."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


async def headless_argv(prompt: str) -> list[str]:
    """`rawtrio -p PROMPT`, local: `--no-attach` when this rawtrio has the flag."""
    argv = [*rawtrio_command(), "-p", prompt]
    done = await trio.run_process([*rawtrio_command(), "--help"], capture_stdout=True)
    return [*argv, "--no-attach"] if b"--no-attach" in done.stdout else argv


def read_stamps(env: dict[str, str]) -> float:
    """ms from the interpreter ready to the SDK import, as the last run's `sitecustomize`
    wrote it (the file is removed, so a run that never imports an SDK is noticed)."""
    path = Path(env["RAWTRIO_BENCH_STAMPS"])
    try:
        ready, sdk = (float(v) for v in path.read_text().split())
    except FileNotFoundError:
        raise RuntimeError("a headless run never imported a provider SDK") from None
    path.unlink()
    return (sdk - ready) * 1000


def _has_more_than(count: int, server: FakeModelServer) -> bool:
    return len(server.requests) > count


async def watch_requests(server: FakeModelServer, arrivals: list[float]) -> None:
    """Stamp each request as the server records it (runs until cancelled)."""
    while True:
        seen = len(arrivals)
        await server.wait_for(partial(_has_more_than, seen))
        now = time.monotonic()
        arrivals.extend(now for _ in range(len(server.requests) - seen))


@dataclass(frozen=True, slots=True)
class Headless:
    sdk_ms: list[float]  # SDK import, per run
    first_ms: list[float]  # spawn -> first request, per run
    before_sdk_ms: list[float]  # interpreter ready -> SDK import begins, per run
    peak_mb: float  # peak RSS of the headless runs


async def headless_vs_sdk(runs: int, cwd: Path) -> Headless:
    """Alternate an SDK import and a headless run, `runs` times each (after one warm-up
    run of each), so that a change of the machine's load affects both alike."""
    scenario = Scenario.from_dict({"rules": [{"match": "*", "replies": [{"text": "Hello!"}]}]})
    arrivals: list[float] = []
    sdk_ms: list[float] = []
    first_ms: list[float] = []
    before_sdk_ms: list[float] = []
    peak_mb = 0.0
    argv = await headless_argv("hello")
    async with open_fake_model_server(scenario) as server, trio.open_nursery() as nursery:
        nursery.start_soon(watch_requests, server, arrivals)
        env = headless_env(server)
        await spawn([sys.executable, "-c", SDK_IMPORT], 1, env, cwd)  # warm the caches
        await spawn(argv, 1, env, cwd)
        read_stamps(env)
        for _ in range(runs):
            sdk = await spawn([sys.executable, "-c", SDK_IMPORT], 1, env, cwd)
            sdk_ms += sdk.walls_ms
            seen = len(arrivals)
            headless = await spawn(argv, 1, env, cwd)
            if len(arrivals) != seen + 1:
                raise RuntimeError(f"a headless run made {len(arrivals) - seen} requests, not 1")
            first_ms.append((arrivals[-1] - headless.starts[0]) * 1000)
            before_sdk_ms.append(read_stamps(env))
            peak_mb = max(peak_mb, headless.maxrss_mb)
        nursery.cancel_scope.cancel(reason="headless runs done")
    return Headless(sdk_ms, first_ms, before_sdk_ms, peak_mb)


async def run(options: Options) -> list[Figure]:
    runs = options.runs
    env = bytecode_env()
    with (
        tempfile.TemporaryDirectory(prefix="rawtrio-bench-") as tmp,
        trio.fail_after(RUN_LIMIT_S + 30 * runs),
    ):
        cwd = Path(tmp)
        await spawn([*rawtrio_command(), "--version"], 2, env, cwd)  # warm the page cache
        bare = await spawn([sys.executable, "-c", "pass"], runs, env, cwd)
        version = await spawn([*rawtrio_command(), "--version"], runs, env, cwd)
        headless = await headless_vs_sdk(runs, cwd)
    sdk_runs_ms, first_ms, peak_mb = headless.sdk_ms, headless.first_ms, headless.peak_mb
    sdk_ms = median(sdk_runs_ms)
    own_ms = median([f - s for f, s in zip(first_ms, sdk_runs_ms, strict=True)])
    bare_ms = median(bare.walls_ms)
    note = f"median of {runs} runs"

    def spread(values: list[float]) -> str:
        return f"{note}; min {min(values):.0f}, max {max(values):.0f} ms"

    return [
        Figure.against(
            "python -c pass (interpreter start-up)", bare_ms, "ms", None, spread(bare.walls_ms)
        ),
        Figure.against(
            "rawtrio --version",
            median(version.walls_ms),
            "ms",
            VERSION_TARGET_MS,
            spread(version.walls_ms),
        ),
        Figure.against(
            "python -c 'import anthropic' (SDK import)",
            sdk_ms,
            "ms",
            None,
            f"{spread(sdk_runs_ms)}; {sdk_ms - bare_ms:.0f} ms over bare start-up",
        ),
        Figure.against(
            "rawtrio -p: start -> first HTTP request",
            median(first_ms),
            "ms",
            sdk_ms + FIRST_REQUEST_EXTRA_MS,
            f"{spread(first_ms)}; target = SDK import figure + {FIRST_REQUEST_EXTRA_MS:.0f} ms; "
            f"rawtrio's own share (median of per-pair differences) = {own_ms:.0f} ms",
        ),
        Figure.against(
            "rawtrio -p: own work before the SDK import",
            median(headless.before_sdk_ms),
            "ms",
            BEFORE_SDK_TARGET_MS,
            f"{spread(headless.before_sdk_ms)}; from the interpreter ready (site done) "
            "to the first import of the provider SDK",
        ),
        Figure.against(
            "rawtrio -p one turn: peak RSS", peak_mb, "MB", RSS_TARGET_MB, f"max of {runs} runs"
        ),
    ]
