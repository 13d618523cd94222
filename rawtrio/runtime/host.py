"""`TurnHost`: what the code of a turn — the loop, the gate, runtime compaction — may use of
its session, and nothing else.

`Session` is the one implementation; the turn's code never names it, so the runtime's
modules import in one direction: session → loop → gate, compaction → host → recorder,
model, turn. What each part is for:

- `recorder`: every commit point and every event (`rawtrio.runtime.recorder`);
- `model`: the provider, the request, accounting and usage (`rawtrio.runtime.model`);
- `compactions`: when the next automatic compaction is due (`rawtrio.context`);
- `registry`, `policy`, `approvals`, `run_hooks`: the tools and what admits a call;
- `jobs`, `plan`, `cwd`: what a tool call gets in its `ToolContext`;
- `checkpoints`: what the turn changed in the working tree (None: not captured);
- `options`: the settings of the model in use (they change with `set_model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rawtrio.checkpoints.capture import TurnCheckpoints
    from rawtrio.context.compaction_state import CompactionState
    from rawtrio.hooks import HookEvent, HookOutcome
    from rawtrio.permissions.approval import ApprovalBroker
    from rawtrio.permissions.policy import PermissionPolicy
    from rawtrio.runtime.model import ModelBinding
    from rawtrio.runtime.options import SessionOptions
    from rawtrio.runtime.recorder import Recorder
    from rawtrio.tools.background import BackgroundJobs
    from rawtrio.tools.base import SubagentRunner
    from rawtrio.tools.registry import ToolRegistry
    from rawtrio.tools.todo import Plan


class TurnHost(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def cwd(self) -> Path: ...
    @property
    def options(self) -> SessionOptions: ...
    @property
    def recorder(self) -> Recorder: ...
    @property
    def model(self) -> ModelBinding: ...
    @property
    def compactions(self) -> CompactionState: ...
    @property
    def registry(self) -> ToolRegistry: ...
    @property
    def policy(self) -> PermissionPolicy: ...
    @property
    def approvals(self) -> ApprovalBroker: ...
    @property
    def jobs(self) -> BackgroundJobs | None: ...
    @property
    def plan(self) -> Plan | None: ...
    @property
    def running_turn(self) -> str | None: ...
    @property
    def checkpoints(self) -> TurnCheckpoints | None: ...
    @property
    def subagents(self) -> SubagentRunner: ...

    async def run_hooks(self, event: HookEvent, payload: Mapping[str, Any]) -> HookOutcome:
        """Run the hooks of `event`; warnings go to the user as notices."""
        ...
