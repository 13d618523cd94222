"""The package's public API: what a spec refuses, and the one stop as MCP and hooks use it.

Real processes throughout."""

from __future__ import annotations

import os
import signal
from collections.abc import Collection
from pathlib import Path

import pytest
import trio

from rawtrio.processes import (
    CALL_ENV_VAR,
    BoundedOutput,
    PipeReader,
    ProcessSpec,
    child_environment,
    new_call_marker,
    open_process_group,
    subreaper,
    watchdog_process,
)
from rawtrio.processes.subreaper import process_state, reap_if_child
from tests.processes.test_group import LIVENESS_S, gone

GRACE = 0.2


def spec_for(script: str, cwd: Path, **kwargs: object) -> ProcessSpec:
    marker = new_call_marker()
    env = child_environment(None, session_id="sess-stop", call_marker=marker)
    return ProcessSpec(("bash", "-c", script), cwd, env, marker, GRACE, **kwargs)  # type: ignore[arg-type]


def test_a_spec_whose_environment_lacks_its_call_marker_is_refused(tmp_path: Path) -> None:
    env = child_environment(None, session_id="s", call_marker="other")
    with pytest.raises(ValueError, match=f"{CALL_ENV_VAR}='mine'"):
        ProcessSpec(("true",), tmp_path, env, "mine")


def test_a_spec_without_a_program_is_refused(tmp_path: Path) -> None:
    env = child_environment(None, session_id="s", call_marker="m")
    with pytest.raises(ValueError, match="argv is empty"):
        ProcessSpec((), tmp_path, env, "m")


def test_a_spec_with_a_negative_grace_period_is_refused(tmp_path: Path) -> None:
    env = child_environment(None, session_id="s", call_marker="m")
    with pytest.raises(ValueError, match="grace_s must be >= 0"):
        ProcessSpec(("true",), tmp_path, env, "m", -1.0)


async def test_a_program_that_exits_when_stdin_closes_is_asked_not_signalled(
    tmp_path: Path,
) -> None:
    with trio.fail_after(LIVENESS_S):
        async with open_process_group(spec_for("exec cat", tmp_path, stdin="pipe")) as group:
            await group.stop(ask_first_s=LIVENESS_S)
    assert (group.proc.returncode, group.sigterm_sent, group.killed) == (0, False, False)


async def test_stop_ends_a_descendant_that_left_the_group(tmp_path: Path) -> None:
    # The escapee prints its pid; the leader (cat) exits on its own once stdin closes.
    script = "setsid bash -c 'echo $$; exec sleep 60' & exec cat"
    printed = trio.Event()
    out = BoundedOutput(1000)

    def on_text(text: str) -> None:
        if "\n" in out.text():
            printed.set()

    with trio.fail_after(LIVENESS_S):
        async with open_process_group(spec_for(script, tmp_path, stdin="pipe")) as group:
            reader = PipeReader(group.stdout, out, on_text)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(reader.read)
                await printed.wait()
                nursery.cancel_scope.cancel(reason="the escapee's pid was read")
            escapee = int(out.text().split()[0])
            assert not gone(escapee)
            await group.stop([reader], ask_first_s=LIVENESS_S)
    assert group.proc.returncode == 0  # the leader was asked, and went
    assert group.sigterm_sent  # the escapee had to be told
    assert gone(escapee)


async def test_leaving_the_block_stops_what_the_block_did_not(tmp_path: Path) -> None:
    with trio.fail_after(LIVENESS_S):
        async with open_process_group(spec_for("trap '' TERM; exec sleep 60", tmp_path)) as group:
            pass
    assert group.stop_attempted
    assert group.sigterm_sent
    assert gone(group.pid)


async def test_a_sweep_never_reaps_a_group_leader_whose_status_the_group_waits_for(
    tmp_path: Path,
) -> None:
    # A session's sweep (`end_marked`) reaps by pid the marked processes it ended that are
    # our children. A group's leader is one, but its exit status belongs to the group's
    # trio Process: reaped by the sweep, the group would report "exit code 0" for a
    # process that was killed.
    with trio.fail_after(LIVENESS_S):
        async with open_process_group(spec_for("exec sleep 30", tmp_path)) as group:
            os.kill(group.pid, signal.SIGKILL)
            # Polling: nothing signals "it is a zombie now" without reaping it.
            while (process_state(group.pid) or ("Z",))[0] != "Z":  # noqa: ASYNC110
                await trio.sleep(0.005)
            reap_if_child([group.pid])
            await group.proc.wait()
    assert group.proc.returncode == -signal.SIGKILL


async def test_tasks_that_look_for_marked_processes_together_share_one_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A /proc scan reads every process's environment; the stops and sweeps of a cancelled
    # parent's children ask at the same moment and share one, each still finding its own.
    scans: list[float] = []
    real_scan = watchdog_process.environ_scan

    def counted(variables: Collection[bytes]) -> dict[int, dict[bytes, bytes]]:
        scans.append(trio.current_time())
        return real_scan(variables)

    monkeypatch.setattr(subreaper, "environ_scan", counted)
    with trio.fail_after(LIVENESS_S):
        async with (
            open_process_group(spec_for("exec sleep 60", tmp_path)) as a,
            open_process_group(spec_for("exec sleep 60", tmp_path)) as b,
        ):
            # A process is found by its environment once its execs are done (`sh`, then the
            # `sleep` it execs): before and during an exec /proc shows the parent's
            # environment or none, and a scan at that moment rightly misses it.
            for group in (a, b):
                cmdline = f"/proc/{group.pid}/cmdline"
                # Polling: an exec has no event to wait for.
                while not (watchdog_process.read_proc_file(cmdline) or b"").startswith(  # noqa: ASYNC110
                    b"sleep\0"
                ):
                    await trio.sleep(0.005)
            found: dict[str, list[int]] = {}

            async def look(marker: str) -> None:
                found[marker] = await subreaper.find_marked(CALL_ENV_VAR, marker)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(look, a.spec.marker)
                nursery.start_soon(look, b.spec.marker)
                nursery.start_soon(look, "nobody-has-this-marker")
            assert len(scans) == 1
            assert found == {
                a.spec.marker: [a.pid],
                b.spec.marker: [b.pid],
                "nobody-has-this-marker": [],
            }
            # Asked once that scan had begun: a scan of its own, never an older answer.
            assert await subreaper.find_marked(CALL_ENV_VAR, a.spec.marker) == [a.pid]
            assert len(scans) == 2
