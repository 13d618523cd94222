"""Hooks: commands bound to session events (docs/hooks.md).

`HookSpec` says what runs on which event; `HookRunner.run(event, payload)` runs the
matching hooks and returns a `HookOutcome`; `rawtrio.hooks.payloads` builds the payloads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rawtrio.hooks import payloads
from rawtrio.hooks.runner import HookOutcome, HookReceipt, HookRunner
from rawtrio.hooks.spec import DEFAULT_HOOK_TIMEOUT_S, TOOL_EVENTS, HookEvent, HookSpec

if TYPE_CHECKING:
    from rawtrio.hooks.decision import HookDecision


def __getattr__(name: str) -> Any:
    """`HookDecision` on first use (PEP 562): its module (with the reading of a hook's
    answer) is loaded by the first hook that runs (`rawtrio.hooks.execute`), not by every
    session's runner."""
    if name != "HookDecision":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from rawtrio.hooks.decision import HookDecision

    globals()[name] = HookDecision
    return HookDecision


__all__ = [
    "DEFAULT_HOOK_TIMEOUT_S",
    "TOOL_EVENTS",
    "HookDecision",
    "HookEvent",
    "HookOutcome",
    "HookReceipt",
    "HookRunner",
    "HookSpec",
    "payloads",
]
