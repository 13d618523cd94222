"""Crash recovery (I6): make a session that a killed process left behind valid again.

A process killed at any point of a turn leaves at most: a turn without an outcome, and
an assistant message whose tool calls lack some results. Recovery, run when a writer
takes the lease, gives each missing call one honest result — `outcome_unknown` when
`mark_call_started` was recorded (it may have run), `cancelled` with `started=False`
when it was not — and marks open turns `interrupted`. Nothing is re-run. The display
history gets the matching `tool_call_finished` and `turn_ended` events, so each turn
still has exactly one terminal event (I2).

`missing_results` is pure, so the in-memory store applies the same rules.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import AssistantMessage, Message, ToolResult

REASON = "rawtrio stopped before the turn finished (crash or kill); found when reopened"


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What reopening a session repaired; empty when the last writer ended cleanly."""

    interrupted_turns: tuple[str, ...] = ()
    results: tuple[ToolResult, ...] = ()

    @property
    def repaired(self) -> bool:
        return bool(self.interrupted_turns or self.results)

    def note(self) -> str | None:
        """The host note for the next user message (turn contract §3.8), if any."""
        if not self.repaired:
            return None
        lines = ["[rawtrio: the previous turn was interrupted: rawtrio stopped before it ended."]
        lines += [f"- tool call {r.name} ({r.call_id}): {r.content}" for r in self.results]
        lines.append("Continue from the current state; do not assume cut work was done.]")
        return "\n".join(lines)


def missing_results(context: Sequence[Message], started: Collection[str]) -> list[ToolResult]:
    """One result for every call of the last assistant message that has none."""
    last = next(
        (i for i in range(len(context) - 1, -1, -1) if isinstance(context[i], AssistantMessage)),
        None,
    )
    if last is None:
        return []
    message = context[last]
    assert isinstance(message, AssistantMessage)
    answered = {m.call_id for m in context[last + 1 :] if isinstance(m, ToolResult)}
    out: list[ToolResult] = []
    for call in message.tool_calls:
        if call.id in answered:
            continue
        if call.id in started:
            out.append(
                ToolResult(
                    call.id,
                    call.name,
                    ToolStatus.OUTCOME_UNKNOWN,
                    "outcome unknown: rawtrio stopped (crash or kill) after this call started; "
                    "it may have run fully, partly or not at all. Check before repeating it.",
                    started=True,
                )
            )
        else:
            out.append(
                ToolResult(
                    call.id,
                    call.name,
                    ToolStatus.CANCELLED,
                    "not run: rawtrio stopped (crash or kill) before this call started",
                    started=False,
                )
            )
    return out


def recovery_events(
    session_id: str,
    turn_of_results: str | None,
    results: Sequence[ToolResult],
    turns: Sequence[str],
    first_seq: int,
    unreported: tuple[str, TurnOutcome, str] | None = None,
) -> list[ev.Event]:
    """The display events that record a recovery, numbered from `first_seq`.

    `unreported` is a turn whose outcome was stored but whose `turn_ended` event was
    still queued when the process died; it gets that event now (I2).
    """
    now = time.time()
    out: list[ev.Event] = [
        ev.ToolCallFinished(
            session_id=session_id,
            turn_id=turn_of_results,
            call_id=r.call_id,
            name=r.name,
            status=r.status,
            content=r.content,
            started=r.started,
            ts=now,
        )
        for r in results
    ]
    if unreported is not None:
        turn_id, outcome, reason = unreported
        out.append(
            ev.TurnEnded(
                session_id=session_id, turn_id=turn_id, outcome=outcome, reason=reason, steps=0
            )
        )
    out += [
        ev.TurnEnded(
            session_id=session_id,
            turn_id=t,
            outcome=TurnOutcome.INTERRUPTED,
            reason=REASON,
            steps=0,
            ts=now,
        )
        for t in turns
    ]
    return [ev.with_seq(e, first_seq + i) for i, e in enumerate(out)]
