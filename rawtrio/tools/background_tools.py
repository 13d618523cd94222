"""`bash_output` and `bash_stop`: the model's handles on background jobs (`bash` with
`background: true`, see `background.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rawtrio.frozen import freeze
from rawtrio.tools.background import Job
from rawtrio.tools.base import Tool, ToolContext, ToolOutput

OUTPUT_DESCRIPTION: Final = """\
Read what a background job (started with bash `background: true`) printed since your \
last bash_output call for it, and whether it is still running or how it ended. Without \
`job_id`, list the session's jobs.
"""

STOP_DESCRIPTION: Final = """\
Stop a background job: SIGTERM to it and everything it started, then SIGKILL after a \
grace period. Returns how it ended and its last output.
"""

_JOB_ID: Final = {"type": "string", "minLength": 1, "description": "The job id, e.g. job-1."}


def bash_output_tool() -> Tool:
    return Tool(
        id="bash_output",
        description=OUTPUT_DESCRIPTION,
        input_schema=freeze(
            {"type": "object", "properties": {"job_id": _JOB_ID}, "additionalProperties": False}
        ),
        handler=_output,
        read_only=True,
        key_argument="job_id",
    )


def bash_stop_tool() -> Tool:
    return Tool(
        id="bash_stop",
        description=STOP_DESCRIPTION,
        input_schema=freeze(
            {
                "type": "object",
                "properties": {"job_id": _JOB_ID},
                "required": ["job_id"],
                "additionalProperties": False,
            }
        ),
        handler=_stop,
        key_argument="job_id",
    )


async def _output(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    if ctx.jobs is None:
        return ToolOutput.error("this session runs no background jobs")
    if "job_id" not in args:
        jobs = ctx.jobs.jobs()
        if not jobs:
            return ToolOutput.ok("no background jobs in this session")
        return ToolOutput.ok("\n".join(f"{j.id}: {_state(j)} — {j.command}" for j in jobs))
    job = _find(ctx, str(args["job_id"]))
    if isinstance(job, ToolOutput):
        return job
    return _new_output(job, ctx.settings.output_cap)


async def _stop(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    job = _find(ctx, str(args["job_id"]))
    if isinstance(job, ToolOutput):
        return job
    assert ctx.jobs is not None
    if job.running:
        await ctx.jobs.stop(job)
    return _new_output(job, ctx.settings.output_cap)


def _find(ctx: ToolContext, job_id: str) -> Job | ToolOutput:
    if ctx.jobs is None:
        return ToolOutput.error("this session runs no background jobs")
    job = ctx.jobs.get(job_id)
    if job is None:
        known = ", ".join(j.id for j in ctx.jobs.jobs()) or "none"
        return ToolOutput.error(f"no background job {job_id!r} (jobs: {known})")
    return job


def _new_output(job: Job, cap: int) -> ToolOutput:
    text, job.read_offset, dropped = job.log.read(job.read_offset)
    notes = []
    if dropped:
        notes.append(f"[{dropped} characters of earlier output were dropped]")
    if len(text) > cap:
        notes.append(f"[{len(text) - cap} characters elided; showing the last {cap}]")
        text = text[-cap:]
    body = text.rstrip("\n") if text.strip() else "(no new output)"
    details: dict[str, Any] = {"job_id": job.id, "running": job.running}
    if job.result is not None:
        details.update(exit_code=job.result.exit_code, signal=job.result.signal)
    return ToolOutput.ok("\n".join([*notes, body, f"[{_state(job)}]"]), **details)


def _state(job: Job) -> str:
    if job.running:
        return "running"
    result = job.result
    if result is None:
        return "ended; exit status unknown"
    how = f", stopped with {result.stopped_with}" if job.stop_requested else ""
    return f"ended after {result.elapsed_s:.1f} s{how}; {result.status_text}"
