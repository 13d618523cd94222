"""Hooks: commands bound to session events (docs/hooks.md).

`HookSpec` says what runs on which event; `HookRunner.run(event, payload)` runs the
matching hooks and returns a `HookOutcome`; `rawtrio.hooks.payloads` builds the payloads.
"""

from __future__ import annotations

from rawtrio.hooks import payloads
from rawtrio.hooks.decision import HookDecision
from rawtrio.hooks.runner import HookOutcome, HookReceipt, HookRunner
from rawtrio.hooks.spec import DEFAULT_HOOK_TIMEOUT_S, TOOL_EVENTS, HookEvent, HookSpec

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
