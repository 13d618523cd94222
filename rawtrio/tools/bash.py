"""The `bash` tool: run a shell command in the session's working directory.

The command runs with `bash -c` (`/bin/sh -c` where bash is missing) in its own process
group, with no terminal and stdin from /dev/null; output is streamed live to the context
and the model gets its head and tail within the output cap. See `rawtrio.processes.group`
for how the group is stopped on timeout and cancel.

On cancellation the handler reports through `ctx.report_cancelled` what it knows — how
long the command ran, how it was stopped, its exit status and the partial output — and
lets `trio.Cancelled` propagate (invariant I5).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import Any, Final

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S, ToolStatus
from rawtrio.frozen import freeze
from rawtrio.processes import EndedBy, ProcessResult, ProcessWatch
from rawtrio.redaction import Redactor, StreamRedactor
from rawtrio.tools.background import Job
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.settings import ToolSettings

#: The longest timeout the model may ask for.
MAX_TIMEOUT_S: Final = 3600.0

#: Set for every command: nothing should wait for a terminal that is not there.
_NON_INTERACTIVE_ENV: Final = {"GIT_TERMINAL_PROMPT": "0", "PAGER": "cat", "GIT_PAGER": "cat"}

DESCRIPTION: Final = """\
Run a shell command with bash in the project's working directory and return its output \
(stdout and stderr merged) and exit code.

- The command runs non-interactively: there is no terminal and stdin is empty, so \
commands that prompt for input will fail or hang until the timeout. Pass flags such as \
`--yes` or `-y`, and avoid editors and pagers.
- Each call starts a fresh shell: `cd` and exported variables do not carry over to the \
next call. Chain dependent steps with `&&`.
- Long output is cut: you get the beginning and the end with the middle elided. Narrow \
it with grep, head or tail, or write it to a file and read parts of it.
- Everything the command starts is stopped when it finishes, including `cmd &`, \
`nohup` and daemons. For a server or watcher that must keep running, set \
`background: true`: you get a job id at once; read its output with bash_output and stop \
it with bash_stop.
- Prefer the read_file, write_file and edit_file tools to cat, sed or echo redirection \
for reading and changing files.
"""


def bash_tool(settings: ToolSettings | None = None) -> Tool:
    """The `bash` tool. `settings` only fill in the description; each call obeys
    `ctx.settings` (the runtime passes the same settings to both)."""
    described_timeout = (settings or ToolSettings()).bash_timeout_s

    async def handler(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
        if args.get("background"):
            return await start_background(ctx, str(args["command"]))
        requested = args.get("timeout_s") or ctx.settings.bash_timeout_s
        timeout_s = min(float(requested), MAX_TIMEOUT_S)
        return await run_bash(ctx, str(args["command"]), timeout_s)

    schema = {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "minLength": 1,
                "description": "The shell command to run (bash syntax).",
            },
            "background": {
                "type": "boolean",
                "description": (
                    "Start the command as a background job and return its id at once "
                    "(default false). It runs until it exits, bash_stop, or the session ends."
                ),
            },
            "timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TIMEOUT_S,
                "description": (
                    f"Stop the command after this many seconds (default "
                    f"{described_timeout:g}). Raise it for long builds or test runs."
                ),
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    return Tool(
        id="bash",
        description=DESCRIPTION,
        input_schema=freeze(schema),
        handler=handler,
        key_argument="command",
    )


def shell_argv(command: str) -> list[str]:
    bash = shutil.which("bash")
    return [bash, "-c", command] if bash else ["/bin/sh", "-c", command]


def command_env(ctx: ToolContext) -> dict[str, str]:
    return {**(ctx.env if ctx.env is not None else os.environ), **_NON_INTERACTIVE_ENV}


async def run_bash(ctx: ToolContext, command: str, timeout_s: float) -> ToolOutput:
    settings = ctx.settings
    redactor = settings.redactor
    live = StreamRedactor(redactor, ctx.output)
    watch = ProcessWatch()
    try:
        result = await ctx.backend.proc.run(
            shell_argv(command),
            cwd=ctx.cwd,
            session_id=ctx.session_id,
            output_cap=settings.output_cap,
            grace_s=settings.sigterm_grace_s,
            timeout_s=timeout_s,
            on_output=live,
            env=command_env(ctx),
            strip_env=settings.strip_env,
            watch=watch,
            call_marker=f"{ctx.session_id}/{ctx.call_id}/{os.urandom(4).hex()}",
        )
    except trio.Cancelled:
        live.flush()
        _report_cancel(ctx, watch, redactor)
        raise
    except OSError as e:
        return ToolOutput.error(
            f"not started: could not start the command: {e.strerror or e}", started=False
        )
    live.flush()
    details = _details(result)
    body = redactor.redact(_body(result))
    if result.ended_by is EndedBy.TIMEOUT:
        text = f"{body}\n[started and timed out after {_secs(timeout_s)} s; {_how(result)}]"
        return ToolOutput(ToolStatus.TIMED_OUT, text, freeze(details))
    text = f"{body}\n[{result.status_text}]"
    if result.exit_code == 0:
        return ToolOutput.ok(text, **details)
    return ToolOutput.error(text, **details)


async def start_background(ctx: ToolContext, command: str) -> ToolOutput:
    if ctx.jobs is None:
        return ToolOutput.error(
            "not started: this session cannot run background jobs; run the command in the "
            "foreground (with a timeout_s) instead",
            started=False,
        )
    try:
        job = ctx.jobs.new_job(command)
        await ctx.jobs.launch(job, shell_argv(command), cwd=ctx.cwd, env=command_env(ctx))
    except (OSError, RuntimeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return ToolOutput.error(f"not started: {reason}", started=False)
    except trio.Cancelled:
        # The model never learns this job's id, so nothing of it may keep running.
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            await ctx.jobs.stop(job)  # at once if its task already ended
        _report_cancelled_job(ctx, job)
        raise
    return ToolOutput.ok(
        f"started background job {job.id} (pid {job.watch.pid}). Read its output with "
        f"bash_output (job_id {job.id!r}); stop it with bash_stop.",
        job_id=job.id,
        pid=job.watch.pid,
    )


def _report_cancelled_job(ctx: ToolContext, job: Job) -> None:
    result = job.result
    if result is None:
        ctx.report_cancelled(
            "not started: cancelled before the background job started", started=False
        )
        return
    ctx.report_cancelled(
        f"started background job {job.id}, then the turn was cancelled before its id was "
        f"reported, so it was stopped ({result.stopped_with or 'it had already exited'}; "
        f"{result.status_text}); partial output:\n{result.output or '(none)'}",
        **_details(result),
    )


def _report_cancel(ctx: ToolContext, watch: ProcessWatch, redactor: Redactor) -> None:
    result = watch.result
    if result is None:
        ctx.report_cancelled("not started: cancelled before the command started", started=False)
        return
    how = result.stopped_with
    if how is None:
        state = f"it had already finished ({result.status_text})"
    else:
        state = f"it was running and was stopped with {how}; {result.status_text}"
    partial = redactor.redact(result.output) if result.output else "(none)"
    ctx.report_cancelled(
        f"started and cancelled after {_secs(result.elapsed_s)} s; {state}; "
        f"partial output:\n{partial}",
        **_details(result),
    )


def _details(result: ProcessResult) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "signal": result.signal,
        "elapsed_s": round(result.elapsed_s, 3),
        "total_bytes": result.total_bytes,
        "elided_bytes": result.elided_bytes,
        "killed": result.killed,
        "ended_by": str(result.ended_by),
    }


def _body(result: ProcessResult) -> str:
    return result.output.rstrip("\n") if result.output.strip() else "(no output)"


def _how(result: ProcessResult) -> str:
    return f"stopped with {result.stopped_with}; {result.status_text}"


def _secs(seconds: float) -> str:
    return f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}"
