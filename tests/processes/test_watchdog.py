"""The watchdog and the sweep at start: no process outlives the rawtrio that started it.

Real processes throughout. A dead rawtrio is played by closing the watchdog's pipe
without the `q` of a normal close — exactly what the kernel does when rawtrio is killed
(tests/headless/test_process_lifetime.py kills the real program).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio

from rawtrio.processes import watchdog_process
from rawtrio.processes.group import run_in_process_group
from rawtrio.processes.watchdog import (
    RECORDS_DIR,
    RUNTIME_ENV_VAR,
    WATCHDOG,
    runtime_marker,
    write_record,
)
from rawtrio.runtime.runtime import open_runtime
from rawtrio.store.memory import MemoryStore
from rawtrio.store.sqlite import SqliteStore
from tests.tools.conftest import until

LIVENESS_S = 20


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; whatever is left is killed and reaped afterwards."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def start(
    spawned: list[subprocess.Popen[bytes]], argv: list[str], marker: str | None = None
) -> subprocess.Popen[bytes]:
    """A process in a session of its own (no group rawtrio knows), optionally marked."""
    env = {"PATH": os.environ["PATH"]}
    if marker is not None:
        env[RUNTIME_ENV_VAR] = marker
    proc = subprocess.Popen(argv, env=env, start_new_session=True)
    spawned.append(proc)
    return proc


def running(proc: subprocess.Popen[bytes]) -> bool:
    """Reaps the process once it exited (it is this test's child)."""
    return proc.poll() is None


def wait_gone(proc: subprocess.Popen[bytes]) -> None:
    proc.wait(timeout=LIVENESS_S)


def test_watchdog_ends_registered_groups_and_marked_processes_when_its_pipe_closes(
    spawned: list[subprocess.Popen[bytes]],
) -> None:
    marker = os.urandom(8).hex()
    # Found only through its registered group: it carries no marker (like `env -i`).
    grouped = start(spawned, ["sleep", "1000"])
    # Found only through its marker: its group was never registered (like `setsid`).
    marked = start(spawned, ["sh", "-c", "trap '' TERM; exec sleep 1000"], marker)
    # Neither: not rawtrio's.
    bystander = start(spawned, ["sleep", "1000"], marker="another-runtime")
    dog = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            watchdog_process.__file__,
            f"{RUNTIME_ENV_VAR}={marker}",
            "0.2",
            str(os.getpid()),
        ],
        stdin=subprocess.PIPE,
    )
    spawned.append(dog)
    assert dog.stdin is not None
    dog.stdin.write(f"+{grouped.pid}\n".encode())
    dog.stdin.flush()
    dog.stdin.close()  # rawtrio died: no `q`
    dog.wait(timeout=LIVENESS_S)
    wait_gone(grouped)
    wait_gone(marked)
    assert marked.returncode == -signal.SIGKILL  # it ignored SIGTERM for the grace period
    assert running(bystander)


def test_watchdog_leaves_an_unregistered_group_alone(
    spawned: list[subprocess.Popen[bytes]],
) -> None:
    ended = start(spawned, ["sleep", "1000"])
    dog = subprocess.Popen(
        [sys.executable, "-I", "-S", watchdog_process.__file__, "RAWTRIO_RUNTIME=x", "0.2", "1"],
        stdin=subprocess.PIPE,
    )
    spawned.append(dog)
    assert dog.stdin is not None
    dog.stdin.write(f"+{ended.pid}\n-{ended.pid}\n".encode())
    dog.stdin.close()
    dog.wait(timeout=LIVENESS_S)
    assert running(ended)


async def test_the_watchdog_starts_with_the_first_command_and_ends_with_the_runtime(
    tmp_path: Path,
) -> None:
    with trio.fail_after(LIVENESS_S):
        async with open_runtime(MemoryStore(), retention_days=0):
            assert not WATCHDOG.running  # nothing started yet: no watchdog
            result = await run_in_process_group(
                ["sh", "-c", f'echo "${RUNTIME_ENV_VAR}"'], cwd=tmp_path, session_id="s"
            )
            assert result.output.strip() == runtime_marker()
            assert WATCHDOG.running
            assert WATCHDOG.proc is not None
            dog = psutil.Process(WATCHDOG.proc.pid)
        assert WATCHDOG.proc is None
        assert not dog.is_running()


async def test_a_killed_watchdog_is_restarted_with_the_live_groups(tmp_path: Path) -> None:
    """The group's only process carries no marker: only its registration can end it."""
    with trio.fail_after(LIVENESS_S):
        async with open_runtime(MemoryStore(), retention_days=0), trio.open_nursery() as nursery:
            results = []

            async def run_sleep() -> None:
                argv = ["env", "-i", "sleep", "1000"]
                results.append(await run_in_process_group(argv, cwd=tmp_path, session_id="s"))

            nursery.start_soon(run_sleep)
            await until(lambda: WATCHDOG.running and len(WATCHDOG.groups) == 1)
            assert WATCHDOG.proc is not None
            WATCHDOG.proc.kill()
            WATCHDOG.proc.wait()
            starts = WATCHDOG.starts
            WATCHDOG.ensure_started()  # what the next command does first
            assert WATCHDOG.starts == starts + 1
            assert WATCHDOG.proc is not None
            assert WATCHDOG.proc.stdin is not None
            WATCHDOG.proc.stdin.close()  # as if rawtrio died now
            await until(lambda: bool(results))
        assert results[0].signal == signal.SIGTERM
        assert results[0].ended_by.value == "exit"


def dead_pid(spawned: list[subprocess.Popen[bytes]]) -> int:
    proc = start(spawned, ["true"])
    proc.wait()
    return proc.pid


async def test_the_sweep_at_start_ends_what_a_dead_runtime_left_and_spares_a_live_ones(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    state = tmp_path / "state"
    # A rawtrio that was killed (its pid is gone), and what it left running.
    dead_record = write_record(state, "dead-runtime", dead_pid(spawned))
    leftover = start(spawned, ["sh", "-c", "trap '' TERM; exec sleep 1000"], "dead-runtime")
    # A rawtrio that is alive (played by a sleep), and its tool.
    live_rawtrio = start(spawned, ["sleep", "1000"])
    live_record = write_record(state, "live-runtime", live_rawtrio.pid)
    live_tool = start(spawned, ["sleep", "1000"], "live-runtime")
    # A process of a runtime recorded in another state directory.
    elsewhere = start(spawned, ["sleep", "1000"], "unrecorded-runtime")
    with trio.fail_after(LIVENESS_S):
        async with SqliteStore(state / "sessions.db") as store, open_runtime(store):
            await until(lambda: not running(leftover) and not dead_record.exists())
            assert running(live_tool)
            assert running(elsewhere)
            assert live_record.exists()
            assert (state / RECORDS_DIR / WATCHDOG.marker).exists()  # this runtime
        assert not (state / RECORDS_DIR / WATCHDOG.marker).exists()
    assert leftover.returncode == -signal.SIGKILL
    assert running(live_tool)


async def test_a_pid_reused_by_another_process_does_not_make_a_runtime_live(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    """The record names a pid that now belongs to a younger process: it is dead."""
    state = tmp_path / "state"
    impostor = start(spawned, ["sleep", "1000"])
    record = write_record(state, "dead-runtime", impostor.pid)
    pid, started, namespace = record.read_text().split()
    record.write_text(f"{pid} {int(started) - 1} {namespace}\n")  # an older process's pid
    leftover = start(spawned, ["sleep", "1000"], "dead-runtime")
    with trio.fail_after(LIVENESS_S):
        async with SqliteStore(state / "sessions.db") as store, open_runtime(store):
            await until(lambda: not running(leftover) and not record.exists())
    assert running(impostor)
