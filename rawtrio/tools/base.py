"""What a tool is, and what it gets when it runs.

Every tool — built-in, MCP or user-defined — is a `Tool` registered in a `ToolRegistry`
through the same `register()` call. A handler receives validated arguments and a
`ToolContext`, and returns a `ToolOutput`. Handlers run inside the turn's cancel scope:

- A handler that finishes returns `ToolOutput` (status `ok`, `error` or `timed_out`).
- On cancellation, a handler that started something (a process) cleans it up in a
  shielded, bounded scope, calls `ctx.report_cancelled(...)` with what it knows (partial
  output, exit status, elapsed time) and lets `trio.Cancelled` propagate. The loop then
  records a `cancelled` result with `started=True` and that report (I5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import FrozenJSON, empty, freeze
from rawtrio.messages import ImagePart
from rawtrio.tools.settings import ToolSettings

if TYPE_CHECKING:
    from rawtrio.tools.backend import Backend
    from rawtrio.tools.background import BackgroundJobs
    from rawtrio.tools.todo import Plan


@dataclass(frozen=True, slots=True)
class ToolOutput:
    status: ToolStatus
    content: str
    details: FrozenJSON = field(default_factory=empty)
    #: Images for the model (MCP results); `content` describes them as well.
    images: tuple[ImagePart, ...] = ()

    @staticmethod
    def ok(content: str, **details: Any) -> ToolOutput:
        return ToolOutput(ToolStatus.OK, content, freeze(details))

    @staticmethod
    def error(content: str, **details: Any) -> ToolOutput:
        return ToolOutput(ToolStatus.ERROR, content, freeze(details))


@dataclass(frozen=True, slots=True)
class CancelReport:
    """What a cancelled handler knew when it stopped: text for the model, facts for UIs."""

    content: str
    details: FrozenJSON = field(default_factory=empty)


class ToolContext:
    """Given to a handler for one call. Not shared between calls."""

    def __init__(
        self,
        *,
        session_id: str,
        call_id: str,
        cwd: Path,
        settings: ToolSettings,
        emit_output: Callable[[str], None] | None = None,
        env: Mapping[str, str] | None = None,
        backend: Backend | None = None,
        jobs: BackgroundJobs | None = None,
        plan: Plan | None = None,
        subagents: SubagentRunner | None = None,
    ) -> None:
        self.session_id = session_id
        self.call_id = call_id
        self.cwd = cwd
        self.settings = settings
        self._emit_output = emit_output
        self.env = env
        if backend is None:
            from rawtrio.tools.backend import LOCAL

            backend = LOCAL
        #: Where file access and process execution go (local, or an editor over ACP).
        self.backend: Backend = backend
        #: The session's background processes; None where the session offers none.
        self.jobs = jobs
        #: The session's task list; None where the session keeps none.
        self.plan = plan
        #: Starts `task` children of the session; None where the session starts none.
        self.subagents = subagents
        self.cancel_report: CancelReport | None = None

    def output(self, text: str) -> None:
        """Stream a piece of live output to subscribers (never blocks)."""
        if self._emit_output is not None and text:
            self._emit_output(text)

    def report_cancelled(self, content: str, **details: Any) -> None:
        """Record what happened before a cancellation; call it before re-raising."""
        self.cancel_report = CancelReport(content, freeze(details))

    def resolve(self, path: str) -> Path:
        """A path argument, relative paths taken against the session's working directory."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.cwd / p


Handler = Callable[[ToolContext, Mapping[str, Any]], Awaitable[ToolOutput]]


class SubagentRunner(Protocol):
    """Starts the `task` tool's children (`ToolContext.subagents`; the session's is
    `rawtrio.runtime.subagents.Subagents`)."""

    async def run(
        self, ctx: ToolContext, *, description: str, prompt: str, agent: str | None
    ) -> ToolOutput: ...


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool. `id` is namespaced for extensions (`mcp/<server>/<tool>`)."""

    id: str
    description: str
    input_schema: FrozenJSON
    handler: Handler
    read_only: bool = False
    #: Whether one call is read-only, for a tool whose answer depends on its arguments
    #: (`task`: whether the child agent is); None: `read_only` decides. Read-only calls
    #: of one reply run side by side (docs/contracts.md, Concurrency inside a turn).
    read_only_for: Callable[[Mapping[str, Any]], bool] | None = None
    #: Consecutive calls of this tool run side by side even when they may write (`task`:
    #: children run concurrently, each through its own permission gate).
    concurrent: bool = False
    #: The argument shown on a tool's one-line summary in front ends (e.g. "command").
    key_argument: str | None = None
