"""The faults the stress scenarios inject: a store write that fails, a model error once.

- `FaultyStore` — the harness's in-memory store, whose write number `fail_at` of the
  measured turn (`commit`, `mark_call_started`, `set_state`, `end_turn`,
  `replace_context`, counted from `arm()` to `disarm()`) raises the store's own error class
  (`rawtrio.store.errors.StoreFull`) once, changing nothing — as a full disk does. Every
  later write succeeds (the fault cleared). It keeps what it held when the fault fired, so
  the checks can tell that nothing committed before was lost.
- `FlakyOnce` — a fake-model scenario whose scripted `error` replies are sent once per
  (user text, step): the retry of the same request gets the reply's text. (The fake server
  itself answers a retry with the same reply, so an error at step 0 would fail every try.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rawtrio.contracts import TurnOutcome
from rawtrio.messages import Message
from rawtrio.store.errors import StoreFull
from rawtrio.testing.fake_model import Scenario
from rawtrio.testing.fake_model.scenario import Reply
from stress.steps import ObservedStore

#: The path the injected `StoreFull` names (the in-memory store has none).
FAULT_PATH = Path("stress-injected-fault.db")


class FaultyStore(ObservedStore):
    """`ObservedStore` that fails its write number `fail_at` (1-based) once `arm()`ed.

    `begin_turn` is not a fault point: it runs in `submit`, before there is a turn to end,
    and a failing `submit` rightly raises to its caller."""

    def __init__(self, fail_at: int | None = None) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.armed = False
        #: Awaited writes since `arm()`.
        self.writes = 0
        #: The write that failed ("commit", …), once the fault fired.
        self.fired: str | None = None
        #: The session's stored context when the fault fired (nothing of it may be lost).
        self.context_at_fault: list[Message] = []
        self._session_id = ""

    def arm(self, session_id: str) -> None:
        """Count the writes of `session_id` from now on (the measured turn is starting)."""
        self.armed = True
        self._session_id = session_id

    def disarm(self) -> None:
        """The measured turn is over: later writes (the follow-up's) never fail."""
        self.armed = False

    def _write(self, session_id: str, what: str) -> None:
        """Count one write; raise the injected fault if it is the one to fail."""
        if not self.armed or session_id != self._session_id or self.fired is not None:
            return
        self.writes += 1
        if self.writes == self.fail_at:
            self.fired = what
            self.context_at_fault = list(self._get(session_id).context)
            raise StoreFull(FAULT_PATH, f"{what} (a fault the stress harness injected)")

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        self._write(session_id, "commit")
        await super().commit(session_id, turn_id, messages)

    async def replace_context(
        self, session_id: str, turn_id: str | None, messages: Sequence[Message]
    ) -> None:
        self._write(session_id, "replace_context")
        await super().replace_context(session_id, turn_id, messages)

    async def mark_call_started(self, session_id: str, turn_id: str, call_id: str) -> None:
        self._write(session_id, "mark_call_started")
        await super().mark_call_started(session_id, turn_id, call_id)

    async def set_state(self, session_id: str, key: str, value: Any) -> None:
        self._write(session_id, f"set_state {key}")
        await super().set_state(session_id, key, value)

    async def end_turn(
        self, session_id: str, turn_id: str, outcome: TurnOutcome, reason: str
    ) -> None:
        self._write(session_id, "end_turn")
        await super().end_turn(session_id, turn_id, outcome, reason)


@dataclasses.dataclass(frozen=True)
class FlakyOnce(Scenario):
    """`Scenario` whose `error` replies are sent once per (user text, step)."""

    sent: set[tuple[str | None, int]] = dataclasses.field(default_factory=set)

    @classmethod
    def wrap(cls, scenario: Scenario) -> FlakyOnce:
        return cls(rules=scenario.rules)

    def pick(self, user_text: str | None, step: int) -> Reply:
        reply = Scenario.pick(self, user_text, step)
        if reply.error is None or reply.error.after is not None:
            return reply
        if (user_text, step) in self.sent:
            return dataclasses.replace(reply, error=None)
        self.sent.add((user_text, step))
        return reply
