"""SIGINT/SIGTERM during a headless run, to rawtrio's pid or to its process group.

The turn is cancelled through the same path as every front end: the cut is recorded
(`stream_interrupted` / a `cancelled` tool result), the last events line is the one
`turn_ended` with outcome `cancelled`, the tool's whole process group is gone, the exit code
names the signal, and stderr has no traceback. Times from signal to exit are measured and
printed (`pytest -s`), never asserted: the only bound is the liveness bound.
"""

from __future__ import annotations

import signal
import subprocess
import time

import psutil
import pytest

from tests.headless.conftest import FakeModel
from tests.headless.support import (
    Finished,
    Isolation,
    LiveRun,
    alive,
    descendant_pids,
    group_members,
    wait_until,
)

KEYS = {"ANTHROPIC_API_KEY": "test-key"}
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}
SIGNALS = pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
TARGETS = pytest.mark.parametrize("group", [False, True], ids=["pid", "group"])


def start(iso: Isolation, fake: FakeModel, prompt: str, *flags: str) -> LiveRun:
    return LiveRun.start(
        iso,
        "-p",
        prompt,
        "--base-url",
        fake.base_url,
        "--model",
        "test-model",
        "--output-format",
        "events",
        "--sigterm-grace",
        "0.2",
        *flags,
        env=KEYS,
    )


def finish_after_signal(run: LiveRun, sig: signal.Signals, *, group: bool) -> Finished:
    sent = time.monotonic()
    run.signal(sig, group=group)
    done = run.finish()
    elapsed_ms = (time.monotonic() - sent) * 1000
    target = "group" if group else "pid"
    print(f"\n{sig.name} to {target} → exit {done.returncode}: {elapsed_ms:.0f} ms")
    return done


def assert_cancelled_cleanly(done: Finished, sig: signal.Signals) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == EXIT[sig], done
    events = done.json_lines()
    last = events[-1]
    assert last["type"] == "turn_ended"
    assert last["outcome"] == "cancelled"
    assert last["reason"] == f"received {sig.name}"
    assert [e["type"] for e in events].count("turn_ended") == 1
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))


@SIGNALS
@TARGETS
def test_signal_while_the_model_streams(
    iso: Isolation, fake_model: FakeModel, sig: signal.Signals, group: bool
) -> None:
    run = start(iso, fake_model, "stall while streaming")
    try:
        run.wait_for_event("text_delta")
        done = finish_after_signal(run, sig, group=group)
    finally:
        if run.proc.poll() is None:
            run.kill()
    assert_cancelled_cleanly(done, sig)
    events = done.json_lines()
    cut = next(e for e in events if e["type"] == "stream_interrupted")
    assert cut["partial_text"]
    assert "assistant_message" not in [e["type"] for e in events]


@SIGNALS
@TARGETS
def test_signal_while_a_tool_runs_stops_its_process_group(
    iso: Isolation, fake_model: FakeModel, sig: signal.Signals, group: bool
) -> None:
    run = start(iso, fake_model, "sleep with a grandchild")
    try:
        started = run.wait_for_event("tool_call_started")
        # bash, its sleep, and sh with its sleep (the grandchild).
        wait_until(lambda: len(descendant_pids(run.proc.pid)) >= 4, "the tool's processes start")
        procs = [psutil.Process(pid) for pid in descendant_pids(run.proc.pid)]
        tool_pgid = procs[0].pid
        assert all(p.ppid() != run.proc.pid or p.pid == tool_pgid for p in procs)
        done = finish_after_signal(run, sig, group=group)
    finally:
        if run.proc.poll() is None:
            run.kill()
    assert_cancelled_cleanly(done, sig)
    assert alive(procs) == []
    assert group_members(tool_pgid) == []
    result = next(e for e in done.json_lines() if e["type"] == "tool_call_finished")
    assert result["call_id"] == started["call_id"]
    assert result["status"] == "cancelled"
    assert result["started"] is True


@SIGNALS
def test_a_second_signal_while_cancelling_is_not_a_traceback(
    iso: Isolation, fake_model: FakeModel, sig: signal.Signals
) -> None:
    # The tool ignores SIGTERM, so cancelling it takes the whole grace period (1 s here):
    # the second signal lands while the first cancellation is still stopping it.
    run = start(iso, fake_model, "sleep ignoring SIGTERM", "--sigterm-grace", "1")
    try:
        run.wait_for_event("tool_call_started")
        wait_until(lambda: len(descendant_pids(run.proc.pid)) >= 2, "the tool's processes start")
        procs = [psutil.Process(pid) for pid in descendant_pids(run.proc.pid)]
        run.signal(sig, group=True)
        time.sleep(0.05)
        done = finish_after_signal(run, sig, group=False)
    finally:
        if run.proc.poll() is None:
            run.kill()
    assert_cancelled_cleanly(done, sig)
    assert alive(procs) == []
    result = next(e for e in done.json_lines() if e["type"] == "tool_call_finished")
    assert result["status"] == "cancelled"


@SIGNALS
def test_a_barrage_of_signals_until_exit_is_not_a_traceback(
    iso: Isolation, fake_model: FakeModel, sig: signal.Signals
) -> None:
    """Signals keep arriving during the cancellation, the shutdown and the exit itself."""
    run = start(iso, fake_model, "sleep with a grandchild")
    try:
        run.wait_for_event("tool_call_started")
        sent = 0
        while run.proc.poll() is None:
            try:
                run.signal(sig, group=sent % 2 == 1)
            except ProcessLookupError:
                break
            sent += 1
            time.sleep(0.002)
        done = run.finish()
    finally:
        if run.proc.poll() is None:
            run.kill()
    print(f"\n{sent} × {sig.name} until exit {done.returncode}")
    assert_cancelled_cleanly(done, sig)


@SIGNALS
def test_signal_while_reading_the_prompt_from_stdin(
    iso: Isolation, fake_model: FakeModel, sig: signal.Signals
) -> None:
    """Before any turn starts there is nothing to cancel: a quiet exit with the signal's code."""
    run = LiveRun.start(
        iso, "-p", "-", "--base-url", fake_model.base_url, env=KEYS, stdin=subprocess.PIPE
    )
    try:
        # Blocked reading the pipe, i.e. past the imports, in `sys.stdin.read()`.
        wait_until(lambda: _blocked_reading_a_pipe(run.proc.pid), "rawtrio waits for stdin")
        done = finish_after_signal(run, sig, group=True)
    finally:
        if run.proc.poll() is None:
            run.kill()
        assert run.proc.stdin is not None
        run.proc.stdin.close()
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == EXIT[sig]
    assert done.stdout == ""


def _blocked_reading_a_pipe(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return "pipe" in f.read()
    except OSError:
        return False
