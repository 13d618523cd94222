from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest
import trio

from rawtrio.processes import (
    SESSION_ENV_VAR,
    EndedBy,
    ProcessResult,
    ProcessWatch,
    run_in_process_group,
)
from rawtrio.processes.bounded_output import BoundedOutput
from rawtrio.processes.subreaper import marked_processes

GRACE = 0.2
#: Liveness bound for any single test (far above the real budget).
LIVENESS_S = 20


async def run_sh(script: str, tmp_path: Path, **kwargs: object) -> ProcessResult:
    with trio.fail_after(LIVENESS_S):
        return await run_in_process_group(
            ["bash", "-c", script],
            cwd=tmp_path,
            session_id="sess-1",
            grace_s=GRACE,
            **kwargs,  # type: ignore[arg-type]
        )


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie that nobody reaped yet counts as gone)."""
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


async def test_exit_code_and_merged_output(tmp_path: Path) -> None:
    result = await run_sh("echo out; echo err >&2; exit 3", tmp_path)
    assert result.exit_code == 3
    assert result.signal is None
    assert result.ended_by is EndedBy.EXIT
    assert result.output == "out\nerr\n"
    assert result.total_bytes == len(result.output)
    assert not result.sigterm_sent
    assert not result.killed
    assert result.status_text == "exit code 3"
    assert gone(result.pid)


async def test_death_by_signal_is_reported(tmp_path: Path) -> None:
    result = await run_sh("kill -USR1 $$", tmp_path)
    assert result.exit_code is None
    assert result.signal == signal.SIGUSR1
    assert result.status_text == f"killed by signal SIGUSR1 ({int(signal.SIGUSR1)})"


async def test_stdin_is_empty_and_cwd_is_used(tmp_path: Path) -> None:
    result = await run_sh("cat; pwd", tmp_path)
    assert result.output == f"{tmp_path}\n"


async def test_environment_is_marked_and_stripped(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "SECRET_KEY": "s3cret", "KEEP": "kept"}
    result = await run_sh(
        f'echo "${SESSION_ENV_VAR}:${{SECRET_KEY:-none}}:$KEEP"',
        tmp_path,
        env=env,
        strip_env=("SECRET_KEY",),
    )
    assert result.output == "sess-1:none:kept\n"


async def test_live_output_reaches_the_callback(tmp_path: Path) -> None:
    chunks: list[str] = []
    result = await run_sh("for i in 1 2 3; do echo line$i; done", tmp_path, on_output=chunks.append)
    assert "".join(chunks) == result.output == "line1\nline2\nline3\n"


async def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    result = await run_sh(r"printf 'ok \xff\xfe end'", tmp_path)
    assert result.output == "ok \ufffd\ufffd end"


async def test_output_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    result = await run_sh("seq 1 100000", tmp_path, output_cap=1000)
    assert result.total_bytes == len("".join(f"{i}\n" for i in range(1, 100001)))
    assert result.elided_bytes == result.total_bytes - 1000
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.endswith("99999\n100000\n")
    assert f"[... {result.elided_bytes} bytes of output elided ...]" in result.output


async def test_100_mb_of_output_keeps_memory_bounded(tmp_path: Path) -> None:
    me = psutil.Process()
    baseline = me.memory_info().rss
    peak = baseline

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, me.memory_info().rss)
            await trio.sleep(0.01)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sample)
        result = await run_sh(
            r"head -c 100000000 /dev/zero | tr '\0' a", tmp_path, output_cap=10_000
        )
        nursery.cancel_scope.cancel(reason="done")
    assert result.exit_code == 0
    assert result.total_bytes == 100_000_000
    assert result.elided_bytes == 100_000_000 - 10_000
    assert result.output.count("a") == 10_000
    assert peak - baseline < 50_000_000


def test_bounded_output_holds_at_most_one_and_a_half_caps() -> None:
    out = BoundedOutput(1000)
    for _ in range(5000):
        out.feed(b"x" * 333)
        assert out.buffered_bytes <= 1500 + 333
    assert out.total_bytes == 5000 * 333
    assert len(out.text().replace("\n", "")) < 1100


def test_bounded_output_does_not_split_characters_at_the_cuts() -> None:
    out = BoundedOutput(10)  # head 5 bytes, tail 5 bytes: both cut inside "é" (2 bytes)
    out.feed("é".encode() * 100)
    head, _, tail = out.text().partition("\n[...")
    assert head == "éé"
    assert tail.endswith("\néé")
    assert "\ufffd" not in out.text()


async def test_timeout_stops_the_whole_group(tmp_path: Path) -> None:
    result = await run_sh("sleep 60 & echo $!; wait", tmp_path, timeout_s=1.0)
    grandchild = int(result.output.split()[0])
    assert result.ended_by is EndedBy.TIMEOUT
    assert result.sigterm_sent
    assert not result.killed
    assert result.signal == signal.SIGTERM
    assert gone(result.pid)
    assert gone(grandchild)


async def test_background_processes_are_stopped_when_the_command_exits(tmp_path: Path) -> None:
    result = await run_sh("sleep 60 & echo $!", tmp_path)
    assert result.ended_by is EndedBy.EXIT
    assert result.exit_code == 0
    assert result.sigterm_sent
    assert gone(int(result.output.split()[0]))


async def test_cancel_kills_a_process_that_ignores_sigterm(tmp_path: Path) -> None:
    watch = ProcessWatch()
    ready = trio.Event()
    returned = False

    def on_output(text: str) -> None:
        if "ready" in text:
            ready.set()

    async def run() -> None:
        nonlocal returned
        await run_sh(
            "trap '' TERM; echo ready; sleep 30; echo never",
            tmp_path,
            on_output=on_output,
            watch=watch,
        )
        returned = True

    with trio.fail_after(LIVENESS_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await ready.wait()
            assert watch.pid is not None
            assert watch.result is None
            assert watch.partial_output() == "ready\n"
            nursery.cancel_scope.cancel(reason="test cancels the command")
    assert not returned
    result = watch.result
    assert result is not None
    assert result.ended_by is EndedBy.CANCEL
    assert result.sigterm_sent
    assert result.killed
    assert result.stopped_with == "SIGTERM, then SIGKILL"
    assert result.signal == signal.SIGKILL
    assert result.elapsed_s >= GRACE
    assert result.output == "ready\n"
    assert gone(result.pid)
    # Only what this test started: other tests' helpers (a fake server) may be children too.
    assert [p for p in marked_processes(SESSION_ENV_VAR, "sess-1") if not gone(p)] == []


async def test_cancel_raises_plain_cancelled(tmp_path: Path) -> None:
    caught: list[BaseException] = []

    async def run() -> None:
        try:
            await run_sh("sleep 30", tmp_path)
        except BaseException as e:
            caught.append(e)
            raise

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await trio.sleep(0.1)
        nursery.cancel_scope.cancel(reason="test")
    assert len(caught) == 1
    assert isinstance(caught[0], trio.Cancelled)


async def test_missing_working_directory_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="No such file"):
        await run_sh("true", tmp_path / "missing")
