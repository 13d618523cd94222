"""The per-session limits every tool obeys (`ToolSettings`), from the configuration.

Below `rawtrio.tools.base` (a call's `ToolContext` carries them) and the session services
that use them without being tools themselves: the background jobs
(`rawtrio.tools.background`) and the hook runner (`rawtrio.hooks.runner`, the same
environment strip list).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rawtrio.contracts import DEFAULT_SIGTERM_GRACE_S, DEFAULT_TOOL_OUTPUT_CAP
from rawtrio.redaction import Redactor


@dataclass(frozen=True, slots=True)
class ToolSettings:
    """Per-session limits the tools obey (from config; small values in tests)."""

    output_cap: int = DEFAULT_TOOL_OUTPUT_CAP
    sigterm_grace_s: float = DEFAULT_SIGTERM_GRACE_S
    bash_timeout_s: float = 120.0
    #: Environment variables removed from every child process (shell-style patterns).
    strip_env: tuple[str, ...] = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "*_API_KEY")
    #: The session's secret values (API keys, secret variables as they are read): command
    #: output never shows them; replaced by `[redacted]` in results, live output and cancel
    #: reports. Shared, so a value read later is redacted from then on.
    redactor: Redactor = field(default_factory=Redactor, compare=False)
    #: Refuse file-tool paths that resolve outside the working directory (symlinks
    #: included). Off by default; it is a guard against mistakes, not a sandbox.
    confine: bool = False
    #: Whether a `task` child of the configured agent named (None: an agent like this
    #: session's own) can only read, so that its call runs side by side with read-only
    #: calls (docs/contracts.md, Read-only `task` calls). The config layer provides it;
    #: None: no child counts as read-only.
    task_reads_only: Callable[[str | None], bool] | None = field(default=None, compare=False)
