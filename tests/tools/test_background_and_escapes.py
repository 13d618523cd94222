"""Real processes: background jobs, double forks, SIGTERM-ignoring children, subreaping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.processes.subreaper import (
    SESSION_ENV_VAR,
    become_child_subreaper,
    end_session_processes,
    marked_processes,
)
from rawtrio.tools.background import open_background_jobs
from rawtrio.tools.background_tools import bash_output_tool, bash_stop_tool
from rawtrio.tools.base import ToolContext, ToolOutput
from rawtrio.tools.bash import bash_tool
from tests.tools.conftest import FAST, MakeCtx, until

LIVENESS_S = 20
BASH, OUTPUT, STOP = bash_tool(), bash_output_tool(), bash_stop_tool()
#: Starts a daemon that leaves the process group (setsid) and ignores SIGTERM.
DAEMON = "setsid bash -c 'trap \"\" TERM; echo daemon-up; exec sleep 60' > daemon.out 2>&1 &"


@pytest.fixture(autouse=True)
def subreaper() -> Iterator[None]:
    enabled = become_child_subreaper()
    yield
    if enabled:
        become_child_subreaper(False)


def _running(name: str, pids: list[int]) -> bool:
    """Whether one of `pids` runs the program `name` (its exec done)."""
    for pid in pids:
        try:
            if psutil.Process(pid).name() == name:
                return True
        except psutil.NoSuchProcess:
            continue
    return False


def alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def session_left(session_id: str) -> list[int]:
    return marked_processes(SESSION_ENV_VAR, session_id)


async def run(ctx: ToolContext, tool: Any = BASH, **args: Any) -> ToolOutput:
    with trio.fail_after(LIVENESS_S):
        out: ToolOutput = await tool.handler(ctx, freeze(args))
        return out


async def test_escaped_daemon_is_ended_when_the_command_exits(
    make_ctx: MakeCtx, tmp_path: Path
) -> None:
    ctx = make_ctx(session_id="sess-escape-exit")
    out = await run(ctx, command=f"{DAEMON} sleep 0.3; echo done")
    assert out.status is ToolStatus.OK
    assert (tmp_path / "daemon.out").read_text() == "daemon-up\n"
    assert session_left("sess-escape-exit") == []
    assert out.details["killed"] is True  # it ignored SIGTERM, so SIGKILL was needed


async def test_escaped_daemon_is_ended_on_cancel(make_ctx: MakeCtx, tmp_path: Path) -> None:
    ctx = make_ctx(session_id="sess-escape-cancel")
    with trio.fail_after(LIVENESS_S):
        async with trio.open_nursery() as nursery:

            async def go() -> None:
                await BASH.handler(ctx, freeze({"command": f"{DAEMON} echo started; sleep 30"}))

            nursery.start_soon(go)
            await until(
                lambda: (
                    (tmp_path / "daemon.out").exists() and bool(session_left("sess-escape-cancel"))
                )
            )
            await trio.sleep(0.1)
            nursery.cancel_scope.cancel(reason="test cancels")
    assert ctx.cancel_report is not None
    assert ctx.cancel_report.content.startswith("started and cancelled after ")
    assert session_left("sess-escape-cancel") == []


async def test_background_job_output_and_stop(make_ctx: MakeCtx) -> None:
    async with open_background_jobs("sess-bg", FAST) as jobs:
        ctx = make_ctx(session_id="sess-bg", jobs=jobs)
        started = await run(ctx, command="echo one; sleep 0.2; echo two; sleep 60", background=True)
        assert started.status is ToolStatus.OK
        job_id = started.details["job_id"]
        seen = ""
        while "two" not in seen:
            seen += (await run(ctx, OUTPUT, job_id=job_id)).content
            await trio.sleep(0.05)
        assert "one" in seen
        assert "[running]" in seen
        stopped = await run(ctx, STOP, job_id=job_id)
        assert "stopped with SIGTERM" in stopped.content
        assert stopped.details["running"] is False
    assert session_left("sess-bg") == []


async def test_closing_the_jobs_ends_everything(make_ctx: MakeCtx, tmp_path: Path) -> None:
    async with open_background_jobs("sess-close", FAST) as jobs:
        ctx = make_ctx(session_id="sess-close", jobs=jobs)
        await run(ctx, command="trap '' TERM; sleep 60", background=True)
        await run(ctx, command=f"{DAEMON} sleep 60", background=True)
        with trio.fail_after(LIVENESS_S):
            await until(
                lambda: (tmp_path / "daemon.out").exists() and len(session_left("sess-close")) >= 3
            )
        pids = session_left("sess-close")
    assert session_left("sess-close") == []
    assert not any(alive(p) for p in pids)


async def test_background_needs_a_session_holder(make_ctx: MakeCtx) -> None:
    out = await run(make_ctx(), command="sleep 1", background=True)
    assert out.status is ToolStatus.ERROR
    assert out.content.startswith("not started:")
    assert out.details["started"] is False


async def test_unknown_job_id(make_ctx: MakeCtx) -> None:
    async with open_background_jobs("sess-unknown", FAST) as jobs:
        out = await run(make_ctx(jobs=jobs), OUTPUT, job_id="job-9")
    assert out.status is ToolStatus.ERROR
    assert "no background job 'job-9'" in out.content


async def test_session_sweep_ends_and_reaps_orphans(make_ctx: MakeCtx, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", SESSION_ENV_VAR: "sess-sweep"}
    # A double fork: the middle process exits at once, the grandchild is re-parented.
    await trio.run_process(["bash", "-c", "(trap '' TERM; exec sleep 60) & exit 0"], env=env)
    with trio.fail_after(LIVENESS_S):
        # Once it is `sleep`: while a process execs, /proc/PID/environ reads empty for a
        # moment, so a sweep right then would not see its marker (the test flaked so).
        await until(lambda: _running("sleep", session_left("sess-sweep")))
        ended = await end_session_processes("sess-sweep", grace_s=0.2)
    assert ended
    assert session_left("sess-sweep") == []
    for pid in ended:
        assert not psutil.pid_exists(pid) or not alive(pid)


async def test_cancel_right_after_a_background_job_started_stops_it(
    make_ctx: MakeCtx, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a cancel between the job's start and its result left the job running
    while the result said only "cancelled" (the model never learned its id)."""
    async with open_background_jobs("sess-bg-cancel", FAST) as jobs:
        ctx = make_ctx(session_id="sess-bg-cancel", jobs=jobs)
        launch = jobs.launch
        with trio.CancelScope() as scope:

            async def launch_then_cancel(*args: Any, **kwargs: Any) -> None:
                await launch(*args, **kwargs)
                scope.cancel(reason="test cancels right after the start")
                await trio.lowlevel.checkpoint()

            monkeypatch.setattr(jobs, "launch", launch_then_cancel)
            with trio.fail_after(LIVENESS_S):
                await run(ctx, command="echo up; sleep 60", background=True)
        assert scope.cancelled_caught
        report = ctx.cancel_report
        assert report is not None
        assert "it was stopped" in report.content
        assert report.details["ended_by"] == "cancel"
        assert session_left("sess-bg-cancel") == []
