"""Hooks: commands bound to session events (docs/hooks.md).

`HookSpec` says what runs on which event; `HookRunner.run(event, payload)` runs the
matching hooks and returns a `HookOutcome`; `rawtrio.hooks.payloads` builds the payloads.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rawtrio.hooks import payloads
from rawtrio.hooks.outcome import HookOutcome, HookReceipt
from rawtrio.hooks.runner import HookRunner
from rawtrio.hooks.spec import DEFAULT_HOOK_TIMEOUT_S, TOOL_EVENTS, HookEvent, HookSpec

if TYPE_CHECKING:
    from rawtrio.hooks.decision import HookDecision

#: Loaded on first use (PEP 562): running a hook and reading its answer are loaded by the
#: first hook that runs (`rawtrio.hooks.execute`), not by every session's runner.
_WHERE: dict[str, str] = {
    "HookDecision": "rawtrio.hooks.decision",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
