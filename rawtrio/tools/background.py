"""Background processes of a session: `bash` with `background: true`, read and stopped later.

A session owns one `BackgroundJobs`, entered inside its nursery:

    async with open_background_jobs(session_id, settings) as jobs:
        ...  # pass `jobs=jobs` to every ToolContext

Each job runs `run_in_process_group` (no timeout) in a task of the jobs' own nursery, so
every job task is owned by the session. Stopping a job cancels that task: SIGTERM to its
group, grace, SIGKILL, reap — and its escaped descendants (marked `RAWTRIO_CALL=<job
marker>`) go the same way. Leaving the `async with` (the session closing) stops every job,
then sweeps any process still marked with the session id (`subreaper.end_session_processes`).

Output is kept twice: the process runner's head-and-tail buffer (for the final status)
and a `JobLog` of the most recent `log_chars` characters that `bash_output` reads
incrementally, saying how much it had to drop.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.processes import (
    ProcessResult,
    ProcessWatch,
    end_session_processes,
    run_in_process_group,
)
from rawtrio.tools.settings import ToolSettings

#: At most this many jobs run at once per session.
MAX_JOBS: Final = 16


class JobLog:
    """The last `limit` characters of a job's output, read incrementally by offset."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._text = ""
        #: Characters written in total; offsets count from the very start.
        self.written = 0

    def write(self, text: str) -> None:
        self._text += text
        self.written += len(text)
        if len(self._text) > 2 * self.limit:
            self._text = self._text[-self.limit :]

    def read(self, offset: int) -> tuple[str, int, int]:
        """(text since `offset`, the new offset, characters dropped before it)."""
        start = self.written - len(self._text)
        dropped = max(0, start - offset)
        return self._text[max(0, offset - start) :], self.written, dropped


@dataclass(eq=False)
class Job:
    id: str
    command: str
    marker: str
    log: JobLog
    watch: ProcessWatch = field(default_factory=ProcessWatch)
    started_at: float = 0.0
    #: Offset of what the model has read so far with bash_output.
    read_offset: int = 0
    done: trio.Event = field(default_factory=trio.Event)
    result: ProcessResult | None = None
    stop_requested: bool = False
    error: str | None = None
    _scope: trio.CancelScope = field(default_factory=trio.CancelScope)

    @property
    def running(self) -> bool:
        return not self.done.is_set()


class BackgroundJobs:
    """The session's background processes. Create with `open_background_jobs`."""

    def __init__(self, nursery: trio.Nursery, session_id: str, settings: ToolSettings) -> None:
        self._nursery = nursery
        self.session_id = session_id
        self.settings = settings
        self._jobs: dict[str, Job] = {}
        self._ids = itertools.count(1)
        self.closed = False

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def jobs(self) -> tuple[Job, ...]:
        return tuple(self._jobs.values())

    def new_job(self, command: str) -> Job:
        """Reserve a job (tracked from now on, so nothing it starts can be lost).

        RuntimeError when the session is closing or has too many jobs."""
        if self.closed:
            raise RuntimeError("the session is closing; no new background jobs")
        if sum(j.running for j in self._jobs.values()) >= MAX_JOBS:
            raise RuntimeError(f"{MAX_JOBS} background jobs are running; stop one first")
        job_id = f"job-{next(self._ids)}"
        job = Job(
            id=job_id,
            command=command,
            marker=f"{self.session_id}/{job_id}/{os.urandom(4).hex()}",
            log=JobLog(self.settings.output_cap * 4),
        )
        self._jobs[job_id] = job
        return job

    async def launch(
        self, job: Job, argv: list[str], *, cwd: Path, env: Mapping[str, str] | None = None
    ) -> None:
        """Start a reserved job; returns once its process exists. OSError when it cannot
        start (the job is then forgotten)."""
        try:
            await self._nursery.start(self._run, job, argv, cwd, env)
        except OSError:
            del self._jobs[job.id]
            raise

    async def start(
        self, argv: list[str], *, command: str, cwd: Path, env: Mapping[str, str] | None = None
    ) -> Job:
        """Reserve and launch a job in one call."""
        job = self.new_job(command)
        await self.launch(job, argv, cwd=cwd, env=env)
        return job

    async def _run(
        self,
        job: Job,
        argv: list[str],
        cwd: Path,
        env: Mapping[str, str] | None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        redactor = self.settings.redactor
        job.started_at = trio.current_time()

        def on_output(text: str) -> None:
            job.log.write(redactor.redact(text))

        with job._scope:
            try:
                job.result = await run_in_process_group(
                    argv,
                    cwd=cwd,
                    session_id=self.session_id,
                    output_cap=self.settings.output_cap,
                    grace_s=self.settings.sigterm_grace_s,
                    timeout_s=None,
                    on_output=on_output,
                    env=env,
                    strip_env=self.settings.strip_env,
                    watch=job.watch,
                    call_marker=job.marker,
                    on_started=task_status.started,
                )
            finally:
                if job.result is None:
                    job.result = job.watch.result
                job.done.set()

    async def stop(self, job: Job) -> None:
        """Stop a job (SIGTERM, grace, SIGKILL) and wait until it was reaped."""
        job.stop_requested = True
        job._scope.cancel(reason=f"background job {job.id} stopped")
        await job.done.wait()

    async def aclose(self) -> None:
        self.closed = True
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            async with trio.open_nursery() as nursery:
                for job in self._jobs.values():
                    if job.running:
                        nursery.start_soon(self.stop, job)
            await end_session_processes(self.session_id, grace_s=self.settings.sigterm_grace_s)


@asynccontextmanager
async def open_background_jobs(
    session_id: str, settings: ToolSettings
) -> AsyncIterator[BackgroundJobs]:
    """The session's background jobs, all ended (escaped descendants included) on exit."""
    async with trio.open_nursery() as nursery:
        jobs = BackgroundJobs(nursery, session_id, settings)
        try:
            yield jobs
        finally:
            await jobs.aclose()
            nursery.cancel_scope.cancel(reason="background jobs closed")
