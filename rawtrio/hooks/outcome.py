"""What running hooks produces: one hook's `HookReceipt`, and the `HookOutcome` of all the
hooks of one event.

Below both the runner (`rawtrio.hooks.runner`, which returns an outcome) and the running
of a hook (`rawtrio.hooks.execute`, which makes receipts and combines them), so neither
imports the other for its types. Loaded with every session's runner: no process, no hook
answer is read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rawtrio.hooks.decision import HookDecision
    from rawtrio.hooks.spec import HookEvent


@dataclass(frozen=True, slots=True)
class HookReceipt:
    """What one hook run did; meant for the display history (never the model context)."""

    hook: str
    event: HookEvent
    #: The match subject: tool id for tool events, source / trigger where those match.
    subject: str | None
    decision: HookDecision
    #: "exit", "timeout", "cancel" or "spawn_error".
    ended_by: str
    exit_code: int | None
    signal: int | None
    elapsed_s: float
    stdout: str
    stderr: str
    #: One line for people: what happened and why.
    summary: str


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """All matching hooks of one event, combined. Empty when none matched."""

    event: HookEvent
    blocked: bool = False
    block_reason: str = ""
    denied: bool = False
    deny_reason: str = ""
    #: Texts for the model, in hook order (see docs/hooks.md for where each event puts them).
    context: tuple[str, ...] = ()
    #: Texts for the user (failures, `systemMessage`); never sent to the model.
    warnings: tuple[str, ...] = ()
    receipts: tuple[HookReceipt, ...] = ()
    #: From Claude Code hooks: "allow" or "ask" for the call (None: no say; a deny is
    #: `denied`). `rawtrio.permissions.policy.with_hook_permission` applies it.
    permission: str | None = None
    #: From Claude Code hooks (`continue: false`): the turn ends after this event.
    halted: bool = False
    halt_reason: str = ""

    @property
    def stopped(self) -> bool:
        """Blocked or denied: the action the event is about should not go ahead."""
        return self.blocked or self.denied

    @property
    def reason(self) -> str:
        """The reason(s) to give the model when `stopped`, deny first."""
        return "\n".join(r for r in (self.deny_reason, self.block_reason) if r)

    def context_text(self) -> str | None:
        """The hooks' context as one text block for the model, or None when there is none."""
        if not self.context:
            return None
        return f"[rawtrio: context from {self.event} hooks]\n" + "\n\n".join(self.context)
