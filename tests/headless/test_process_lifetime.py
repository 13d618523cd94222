"""No process rawtrio started outlives a `kill -9` of rawtrio (its watchdog ends them).

The real program runs a `bash` call that starts `sleep 1000` in the tool's process group
and a grandchild that leaves it with `setsid`; rawtrio is SIGKILLed while the call runs.
Nothing rawtrio could do at that moment helps: the processes must be ended by the
watchdog, which itself must be gone too. The only bound is the liveness bound; the time
from the kill to the last process gone is printed (`pytest -s`), never asserted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator

import psutil
import pytest

from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import (
    Isolation,
    LiveRun,
    alive,
    descendant_pids,
    is_watchdog,
    wait_until,
)

#: The tool's processes: bash, its `sleep 1000`, and a grandchild in a session of its own.
COMMAND = (
    "setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' < /dev/null > /dev/null 2>&1 & "
    "sleep 1000"
)
SCENARIO = {
    "rules": [
        {
            "match": "leave processes behind",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": COMMAND}}]},
                {"text": "never reached"},
            ],
        }
    ]
}


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(SCENARIO, tmp_path_factory.mktemp("fake-model")) as fake:
        yield fake


def sleeps(pid: int) -> list[int]:
    """The `sleep` processes below `pid` that run (after `exec`)."""
    found = []
    for child in descendant_pids(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            if psutil.Process(child).name() == "sleep":
                found.append(child)
    return found


def start(iso: Isolation, fake: FakeModel) -> LiveRun:
    return LiveRun.start(
        iso,
        "-p",
        "leave processes behind",
        "--base-url",
        fake.base_url,
        "--model",
        "test-model",
        "--output-format",
        "events",
        env={"ANTHROPIC_API_KEY": "test-key"},
    )


def test_kill_9_of_rawtrio_mid_tool_leaves_no_process_running(
    iso: Isolation, fake: FakeModel
) -> None:
    run = start(iso, fake)
    procs: list[psutil.Process] = []
    try:
        run.wait_for_event("tool_call_started")
        wait_until(lambda: len(sleeps(run.proc.pid)) == 2, "both sleeps run")
        # bash, its sleep, the escaped sleep, and the watchdog.
        procs = [psutil.Process(p) for p in descendant_pids(run.proc.pid, with_watchdog=True)]
        escaped = int((iso.cwd / "escaped.pid").read_text())
        assert escaped in [p.pid for p in procs]
        assert os.getsid(escaped) == escaped  # it left the tool's session and group
        killed = time.monotonic()
        run.proc.send_signal(signal.SIGKILL)
        run.proc.wait()
        wait_until(lambda: alive(procs) == [], "every process rawtrio started ended")
        print(f"\nall {len(procs)} processes gone {time.monotonic() - killed:.2f} s after kill -9")
    finally:
        if run.proc.poll() is None:
            run.kill()
        for p in alive(procs):
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()


def test_the_watchdog_ends_with_a_rawtrio_that_exits_normally(
    iso: Isolation, fake: FakeModel
) -> None:
    run = start(iso, fake)
    watchdogs: list[psutil.Process] = []
    try:
        run.wait_for_event("tool_call_started")
        wait_until(lambda: len(sleeps(run.proc.pid)) == 2, "both sleeps run")
        children = [psutil.Process(p) for p in descendant_pids(run.proc.pid, with_watchdog=True)]
        watchdogs = [p for p in children if is_watchdog(p)]
        assert len(watchdogs) == 1
        run.proc.send_signal(signal.SIGTERM)  # a cancelled turn, a normal exit
        done = run.finish()
        assert done.returncode == 143, done
        assert alive(children) == []  # the watchdog was reaped with everything else
    finally:
        if run.proc.poll() is None:
            run.kill()
