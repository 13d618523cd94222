from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import trio

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.tools.base import ToolOutput
from rawtrio.tools.bash import bash_tool
from tests.tools.conftest import MakeCtx

LIVENESS_S = 20
BASH = bash_tool()


async def run(make_ctx: MakeCtx, **args: Any) -> ToolOutput:
    with trio.fail_after(LIVENESS_S):
        return await BASH.handler(make_ctx(), freeze(args))


async def test_success_reports_output_and_exit_code(make_ctx: MakeCtx) -> None:
    out = await run(make_ctx, command="echo hello; echo world >&2")
    assert out.status is ToolStatus.OK
    assert out.content == "hello\nworld\n[exit code 0]"
    assert out.details["exit_code"] == 0
    assert out.details["ended_by"] == "exit"


async def test_runs_in_the_working_directory(make_ctx: MakeCtx, tmp_path: Path) -> None:
    out = await run(make_ctx, command="pwd")
    assert out.content.startswith(f"{tmp_path}\n")


async def test_no_output_is_said_plainly(make_ctx: MakeCtx) -> None:
    out = await run(make_ctx, command="true")
    assert out.content == "(no output)\n[exit code 0]"


async def test_nonzero_exit_is_an_error_with_output(make_ctx: MakeCtx) -> None:
    out = await run(make_ctx, command="echo oops; exit 4")
    assert out.status is ToolStatus.ERROR
    assert out.content == "oops\n[exit code 4]"
    assert out.details["exit_code"] == 4


async def test_death_by_signal_is_named(make_ctx: MakeCtx) -> None:
    out = await run(make_ctx, command="kill -SEGV $$")
    assert out.status is ToolStatus.ERROR
    assert f"killed by signal SIGSEGV ({int(signal.SIGSEGV)})" in out.content
    assert out.details["signal"] == signal.SIGSEGV


async def test_timeout_returns_timed_out_with_partial_output(make_ctx: MakeCtx) -> None:
    out = await run(make_ctx, command="echo partial; sleep 30", timeout_s=1.0)
    assert out.status is ToolStatus.TIMED_OUT
    assert out.content.startswith("partial\n")
    assert "timed out after 1.0 s" in out.content
    assert "stopped with SIGTERM" in out.content
    assert out.details["ended_by"] == "timeout"


async def test_secrets_are_stripped_and_session_is_marked(make_ctx: MakeCtx) -> None:
    env = {"PATH": os.environ["PATH"], "ANTHROPIC_API_KEY": "sk-secret"}
    with trio.fail_after(LIVENESS_S):
        out = await BASH.handler(
            make_ctx(env=env),
            freeze({"command": 'echo "${ANTHROPIC_API_KEY:-gone} $RAWTRIO_SESSION"'}),
        )
    assert out.content.startswith("gone sess-test\n")


async def test_live_output_is_streamed(make_ctx: MakeCtx) -> None:
    seen: list[str] = []
    with trio.fail_after(LIVENESS_S):
        await BASH.handler(make_ctx(emit_output=seen.append), freeze({"command": "echo live"}))
    assert "".join(seen) == "live\n"


async def cancel_when_ready(make_ctx: MakeCtx, command: str) -> tuple[Any, bool]:
    """Run `command`, cancel it once it printed "ready"; (the context, whether it returned)."""
    ready = trio.Event()
    returned = False

    def emit(text: str) -> None:
        if "ready" in text:
            ready.set()

    ctx = make_ctx(emit_output=emit)

    async def call() -> None:
        nonlocal returned
        await BASH.handler(ctx, freeze({"command": command}))
        returned = True

    with trio.fail_after(LIVENESS_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await ready.wait()
            nursery.cancel_scope.cancel(reason="user pressed Esc")
    return ctx, returned


async def test_cancel_reports_partial_output_and_sigterm(make_ctx: MakeCtx) -> None:
    ctx, returned = await cancel_when_ready(make_ctx, "echo ready; sleep 30")
    assert not returned
    report = ctx.cancel_report
    assert report is not None
    assert report.content.startswith("started and cancelled after ")
    assert "it was running and was stopped with SIGTERM;" in report.content
    assert f"killed by signal SIGTERM ({int(signal.SIGTERM)})" in report.content
    assert report.content.endswith("partial output:\nready\n")
    assert report.details["signal"] == signal.SIGTERM
    assert report.details["exit_code"] is None
    assert report.details["killed"] is False
    assert report.details["elapsed_s"] >= 0


async def test_cancel_of_a_sigterm_ignoring_command_reports_sigkill(make_ctx: MakeCtx) -> None:
    ctx, returned = await cancel_when_ready(make_ctx, "trap '' TERM; echo ready; sleep 30")
    assert not returned
    report = ctx.cancel_report
    assert report is not None
    assert "stopped with SIGTERM, then SIGKILL" in report.content
    assert report.details["signal"] == signal.SIGKILL
    assert report.details["killed"] is True
    assert report.details["elapsed_s"] >= 0.2  # the grace period was given


async def test_missing_working_directory_is_an_error(make_ctx: MakeCtx, tmp_path: Path) -> None:
    with trio.fail_after(LIVENESS_S):
        out = await BASH.handler(make_ctx(cwd=tmp_path / "gone"), freeze({"command": "true"}))
    assert out.status is ToolStatus.ERROR
    assert "could not start the command" in out.content
