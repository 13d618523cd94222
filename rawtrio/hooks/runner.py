"""Run the hooks bound to an event and combine what they decide.

`HookRunner.run(event, payload)` runs every matching hook, one after another in the
configured order — sequentially on purpose: hooks on the same event often act on the same
files (format, then lint), and their order, their receipts and their effects must not
depend on scheduling. Every hook runs even when an earlier one blocked, as in Claude Code,
so logging and auditing hooks always see the event.

The runner is awaited by the task the event belongs to (the turn's task for turn events),
so it lives inside the session's nursery and the turn's cancel scope: a cancelled turn
stops the running hook's process group (shielded, bounded), reports a `cancelled` receipt
through `on_receipt`, and `trio.Cancelled` propagates (I4). A hook that cannot start,
hangs, prints garbage or dies by a signal yields a warning receipt; `run` itself never
raises for a hook's misbehaviour.

Running a hook and reading its answer is `rawtrio.hooks.execute`, loaded by the first
event that has a matching hook: a session without hooks has a runner that never loads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rawtrio.compat.claude_code import claude_payload
from rawtrio.contracts import DEFAULT_SIGTERM_GRACE_S
from rawtrio.frozen import thaw
from rawtrio.hooks.outcome import HookOutcome, HookReceipt
from rawtrio.hooks.spec import MATCH_FIELD, HookEvent, HookSpec
from rawtrio.redaction import Redactor
from rawtrio.tools.settings import ToolSettings

if TYPE_CHECKING:
    from rawtrio.hooks.decision import Verdict

#: Bytes of stdout and of stderr kept per hook run (head and tail).
HOOK_OUTPUT_CAP: Final = 64_000
#: Removed from every hook's environment: the same patterns as for tools' processes.
DEFAULT_STRIP_ENV: Final = ToolSettings().strip_env


class HookRunner:
    """The hooks of one session. `on_receipt` gets each receipt as soon as it exists,
    including the receipt of a run cut by a cancellation; it must not block or raise."""

    def __init__(
        self,
        hooks: Iterable[HookSpec],
        *,
        session_id: str,
        cwd: Path,
        grace_s: float = DEFAULT_SIGTERM_GRACE_S,
        output_cap: int = HOOK_OUTPUT_CAP,
        env: Mapping[str, str] | None = None,
        strip_env: Sequence[str] = DEFAULT_STRIP_ENV,
        redactor: Redactor | None = None,
        on_receipt: Callable[[HookReceipt], None] | None = None,
    ) -> None:
        self.hooks = tuple(hooks)
        self.session_id = session_id
        self.cwd = cwd
        self.grace_s = grace_s
        self.output_cap = output_cap
        self.env = env
        self.strip_env = tuple(strip_env)
        self.on_receipt = on_receipt
        self.redactor = redactor if redactor is not None else Redactor()

    def matching(self, event: HookEvent, payload: Mapping[str, Any]) -> tuple[HookSpec, ...]:
        subject = _subject(event, payload)
        return tuple(h for h in self.hooks if h.event is event and h.matches(subject))

    def input_for(
        self, event: HookEvent, payload: Mapping[str, Any], hook: HookSpec | None = None
    ) -> dict[str, Any]:
        """The JSON object a hook reads on stdin: the common fields, then `payload` — in
        Claude Code's names and shapes for a `claude-code` hook."""
        body = thaw(payload)
        if hook is not None and hook.dialect == "claude-code":
            body = claude_payload(body, self.cwd)
        return {
            **body,
            "session_id": self.session_id,
            "cwd": str(self.cwd),
            "hook_event_name": str(event),
        }

    async def run(self, event: HookEvent, payload: Mapping[str, Any]) -> HookOutcome:
        """Run the hooks matching `event` and `payload` (built with `rawtrio.hooks.payloads`)."""
        event = HookEvent(event)
        hooks = self.matching(event, payload)
        if not hooks:
            return HookOutcome(event)
        subject = _subject(event, payload)
        results = []
        for h in hooks:
            stdin = json.dumps(self.input_for(event, payload, h), ensure_ascii=False).encode()
            results.append(await self._run_one(h, subject, stdin))
        from rawtrio.hooks.execute import combine

        return combine(event, results)

    async def _run_one(
        self, hook: HookSpec, subject: str | None, stdin: bytes
    ) -> tuple[Verdict, HookReceipt]:
        """Run one hook and publish its receipt; its verdict and receipt."""
        from rawtrio.hooks.execute import run_one  # only a session with matching hooks

        return await run_one(self, hook, subject, stdin)

    def publish(self, receipt: HookReceipt) -> None:
        """Hand `receipt` to `on_receipt` (`rawtrio.hooks.execute`, as each hook ends)."""
        if self.on_receipt is not None:
            self.on_receipt(receipt)


def _subject(event: HookEvent, payload: Mapping[str, Any]) -> str | None:
    name = MATCH_FIELD.get(event)
    value = payload.get(name) if name is not None else None
    return value if isinstance(value, str) else None
