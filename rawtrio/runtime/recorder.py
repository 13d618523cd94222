"""The session's recorder: every durable write of a turn, and every event, go through here.

- `emit` numbers an event, scrubs its secrets, records it and publishes it to subscribers.
- The commit points (`commit_user_message`, `commit_assistant`, `commit_results`,
  `commit_note`, `mark_started`, `replace_context`) each write in one store transaction,
  shielded with a deadline (`store_call`): a cancellation can neither tear nor hang them.
  The caller updates `Turn` in the same synchronous stretch (no checkpoint in between).
- `finish_turn` records what a turn's end cut (I1, I2, I5), then its one outcome.
- The host note for the next user message (§3.8) lives here and in the store until sent.

Store faults (disk full, I/O error, a lock held too long): a commit point that fails
ends the turn with `error` and the store's message, and the turn's ending is still
emitted to every subscriber. The writes of a turn's ending that failed (results for cut
calls, the outcome, the usage totals, the note) are kept in order (`unsaved`) and written
before the next turn begins (`write_unsaved`); until they are, `Session.submit` raises the
store's error and nothing else changes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import trio

from rawtrio import events as ev
from rawtrio.contracts import CLEANUP_DEADLINE_S, ToolStatus, TurnOutcome
from rawtrio.messages import Message, ToolCall, ToolResult, UserMessage
from rawtrio.providers.base import StreamDone
from rawtrio.redaction import Redactor
from rawtrio.runtime.subscribers import SubscriberHub
from rawtrio.runtime.turn import Turn, cancelled_result
from rawtrio.store.base import SessionStore
from rawtrio.store.errors import StoreError

log = logging.getLogger(__name__)
#: Session state key of the note for the next user message, so it survives a restart.
PENDING_NOTE_KEY = "pending_note"
#: Session state key of the usage and cost totals, so `/cost` covers every run of it.
USAGE_STATE_KEY = "usage_totals"
#: Turn endings kept for `wait_turn` after the turn ended (a bound, not a history).
REMEMBER_ENDED = 64
E = TypeVar("E", bound=ev.Event)
Write = Callable[[], Awaitable[None]]


class Recorder:
    def __init__(
        self,
        *,
        session_id: str,
        store: SessionStore,
        redactor: Redactor,
        context: list[Message],
        last_seq: int,
        note: str | None,
        forward: Callable[[ev.Event], None] | None = None,
    ) -> None:
        self.session_id = session_id
        self.store = store
        self.redactor = redactor
        #: The model context as committed (the store holds the same).
        self.context = context
        #: The sequence number of the last event emitted.
        self.seq = last_seq
        self.hub = SubscriberHub()
        #: Host note for the next user message (§3.8); kept in the store until sent.
        self.note = note
        #: Writes of earlier turns' endings that a store fault stopped, oldest first.
        self.unsaved: list[Write] = []
        #: The last `REMEMBER_ENDED` turn endings, oldest first.
        self.ended: dict[str, ev.TurnEnded] = {}
        #: A `task` child's bridge to its parent: gets every event after it is published.
        self.forward = forward

    def emit(self, event: E) -> E:
        """Number, record and publish an event; returns it as subscribers got it.

        Secret values are redacted here, so no event reaches a subscriber or the display
        history with one in it."""
        self.seq += 1
        event = ev.with_seq(self.redactor.scrub(event), self.seq)
        self.store.record_event(event)
        self.hub.publish(event)
        if self.forward is not None:
            self.forward(event)
        return event

    async def store_call(self, call: Callable[[], Awaitable[None]]) -> None:
        """Run a store write that a cancellation can neither tear nor hang."""
        with trio.move_on_after(CLEANUP_DEADLINE_S) as scope:
            scope.shield = True
            await call()
        if scope.cancelled_caught:
            raise StoreError(f"the session store did not answer within {CLEANUP_DEADLINE_S} s")

    async def _durably(self, turn: Turn, messages: Sequence[Message]) -> None:
        """Commit messages to the model context in one transaction (secrets redacted: the
        tools already ran with what the model sent, the transcript never holds a secret)."""
        messages = [self.redactor.scrub(m) for m in messages]
        await self.store_call(lambda: self.store.commit(self.session_id, turn.id, messages))
        self.context.extend(messages)

    async def write_unsaved(self) -> None:
        """Write what a store fault kept from earlier turns' endings, in order (raises the
        store's error while it persists; what is still unsaved stays kept)."""
        while self.unsaved:
            await self.store_call(self.unsaved[0])
            self.unsaved.pop(0)

    async def add_note(self, text: str) -> None:
        """Add to the note for the next user message, durably, and tell the user."""
        self.note = f"{self.note}\n\n{text}" if self.note else text
        await self.store.set_state(self.session_id, PENDING_NOTE_KEY, self.note)
        self.emit(ev.Notice(session_id=self.session_id, level="info", text=text))

    async def save_usage(self, saved: Any) -> None:
        """Store the usage totals outside a turn; a store fault keeps them for the next turn."""

        async def write() -> None:
            await self.store.set_state(self.session_id, USAGE_STATE_KEY, saved)

        try:
            await self.store_call(write)
        except StoreError as exc:  # kept for the next turn; the session goes on
            log.warning("session %s: usage totals not saved yet: %s", self.session_id, exc)
            self.unsaved.append(write)

    # --- the commit points of a turn (docs/contracts.md) -------------------------------

    async def mark_started(self, turn: Turn, call: ToolCall) -> None:
        """Durably note a call is starting; a cancel that landed meanwhile stops it (I4)."""
        sid = self.session_id
        await self.store_call(lambda: self.store.mark_call_started(sid, turn.id, call.id))
        await trio.lowlevel.checkpoint()

    async def commit_user_message(self, turn: Turn, hook_context: str | None = None) -> None:
        note = self.note
        text = "\n\n".join(t for t in (note, turn.text, hook_context) if t)
        await self._durably(turn, [UserMessage(text)])
        if note is not None:
            self.note = None
            sid = self.session_id
            await self.store_call(lambda: self.store.set_state(sid, PENDING_NOTE_KEY, None))
        self.emit(
            ev.UserMessageCommitted(
                session_id=self.session_id,
                turn_id=turn.id,
                text=turn.text,
                note=note,
                client_request_id=turn.client_request_id,
            )
        )

    async def commit_note(self, turn: Turn, text: str) -> None:
        """A host message to the model in the middle of a turn (e.g. a Stop hook's reason)."""
        await self._durably(turn, [UserMessage(text)])
        self.emit(ev.Notice(session_id=self.session_id, turn_id=turn.id, level="info", text=text))

    async def commit_assistant(self, turn: Turn, done: StreamDone) -> None:
        """Commit a finished reply (I3). The caller accounts its usage right after."""
        msg = done.message
        await self._durably(turn, [msg])
        turn.streaming = None
        turn.pending = list(msg.tool_calls)
        turn.final_text = msg.text
        self.emit(
            ev.AssistantMessageCommitted(
                session_id=self.session_id,
                turn_id=turn.id,
                step=turn.step,
                text=msg.text,
                tool_calls=tuple((c.id, c.name, c.arguments) for c in msg.tool_calls),
                stop_reason=done.stop_reason,
            )
        )

    async def commit_results(self, turn: Turn, results: Sequence[ToolResult]) -> None:
        await self._durably(turn, results)
        ids = {r.call_id for r in results}
        turn.pending = [c for c in turn.pending if c.id not in ids]
        for call_id in ids:
            turn.running.pop(call_id, None)
            turn.finished.pop(call_id, None)
        for r in results:
            self.emit(
                ev.ToolCallFinished(
                    session_id=self.session_id,
                    turn_id=turn.id,
                    call_id=r.call_id,
                    name=r.name,
                    status=r.status,
                    content=r.content,
                    started=r.started,
                    denied_by=r.denied_by,
                    details=r.details,
                )
            )

    async def replace_context(self, turn_id: str | None, messages: Sequence[Message]) -> None:
        """Compaction's one change: the model context becomes `messages`, durably (the
        summary is model output: scrubbed like every committed message)."""
        batch = [self.redactor.scrub(m) for m in messages]
        sid = self.session_id
        await self.store_call(lambda: self.store.replace_context(sid, turn_id, batch))
        self.context[:] = batch

    # --- the turn's end -----------------------------------------------------------------

    async def finish_turn(
        self, turn: Turn, outcome: TurnOutcome, reason: str, usage: Any
    ) -> ev.TurnEnded:
        """Record what the turn cut, then its one outcome (I1, I2, I5), and the usage totals
        `usage` (as stored). Runs shielded.

        Never raises: a store fault in any of these writes turns the outcome into `error`
        with the store's message, keeps the failed write (and every later one) for the
        next turn, and the `turn_ended` event is emitted all the same."""
        sid = self.session_id
        failed: list[StoreError] = []
        outcome_stored = False  # once it is, the event says what the store holds (I2)

        async def write(w: Write) -> None:
            nonlocal outcome, reason
            if failed:  # the store is failing: keep the order, try again next turn
                self.unsaved.append(w)
                return
            try:
                await w()
            except StoreError as exc:
                failed.append(exc)
                self.unsaved.append(w)
                if outcome is not TurnOutcome.ERROR and not outcome_stored:
                    outcome, reason = TurnOutcome.ERROR, str(exc)

        try:
            cut: list[str] = []
            if turn.streaming is not None:
                self.emit(
                    ev.StreamInterrupted(
                        session_id=sid,
                        turn_id=turn.id,
                        step=turn.streaming.step,
                        partial_text=turn.streaming.text,
                        reason=reason,
                    )
                )
                cut.append("your reply was cut off while streaming and was not kept")
                turn.streaming = None
            if turn.pending:
                results = [
                    turn.finished.get(c.id) or cut_result(c, turn, outcome, reason)
                    for c in turn.pending
                ]
                cut.extend(
                    f"tool call {r.name} ({r.call_id}): {r.content}"
                    for r in results
                    if r.call_id not in turn.finished
                )
                await write(lambda: self.commit_results(turn, results))
            await write(lambda: self.store.set_state(sid, USAGE_STATE_KEY, usage))
            # Late-bound: a retried outcome is the one the turn ended with.
            await write(lambda: self.store.end_turn(sid, turn.id, outcome, reason))
            outcome_stored = not failed
            if cut and outcome in (TurnOutcome.CANCELLED, TurnOutcome.ERROR):
                note = self.note = _interruption_note(outcome, reason, cut)
                await write(lambda: self.store.set_state(sid, PENDING_NOTE_KEY, note))
            if failed:
                self.emit(
                    ev.Notice(
                        session_id=sid,
                        turn_id=turn.id,
                        level="error",
                        text=f"{failed[0]}. What was not saved is written before the next "
                        "turn starts; nothing saved before was lost.",
                    )
                )
        finally:
            ended = ev.TurnEnded(
                session_id=sid,
                turn_id=turn.id,
                outcome=outcome,
                reason=reason,
                steps=turn.step,
                final_text=turn.final_text,
            )
            self.ended[turn.id] = ended = self.emit(ended)
            while len(self.ended) > REMEMBER_ENDED:
                self.ended.pop(next(iter(self.ended)))
        return ended


def cut_result(call: ToolCall, turn: Turn, outcome: TurnOutcome, reason: str) -> ToolResult:
    """The result of a call the turn's end cut: `cancelled`, or an error for a failed turn."""
    r = cancelled_result(call, turn.running.get(call.id), reason)
    return r if outcome is TurnOutcome.CANCELLED else _as_error(r, reason)


def _as_error(r: ToolResult, reason: str) -> ToolResult:
    content = f"the turn ended with an error ({reason}); {r.content}"
    return dataclasses.replace(r, status=ToolStatus.ERROR, content=content)


def _interruption_note(outcome: TurnOutcome, reason: str, cut: list[str]) -> str:
    what = "was cancelled" if outcome is TurnOutcome.CANCELLED else "ended with an error"
    lines = [f"[rawtrio: the previous turn {what} ({reason}) at {time.strftime('%H:%M:%S')}."]
    lines += [f"- {c}" for c in cut]
    lines.append("Continue from the current state; do not assume cut work was done.]")
    return "\n".join(lines)
