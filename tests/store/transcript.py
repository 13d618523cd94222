"""A small scripted turn written straight to a store, as the runtime would write it."""

from __future__ import annotations

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.messages import AssistantMessage, TextPart, ToolCall, ToolResult, UserMessage
from rawtrio.store.base import SessionStore

CALLS = (
    ToolCall.parse("c1", "bash", '{"command": "echo one"}'),
    ToolCall.parse("c2", "bash", '{"command": "echo two"}'),
)


async def write_turn(
    store: SessionStore, sid: str, turn: str, prompt: str, seq: int, *, finish: bool = True
) -> int:
    """User message, a two-call batch, results, final reply. Returns the last seq."""

    def emit(event: ev.Event) -> None:
        nonlocal seq
        seq += 1
        store.record_event(ev.with_seq(event, seq))

    await store.begin_turn(sid, turn, f"req-{turn}")
    await store.commit(sid, turn, [UserMessage(prompt)])
    emit(ev.UserMessageCommitted(session_id=sid, turn_id=turn, text=prompt))
    emit(ev.StepStarted(session_id=sid, turn_id=turn, step=1, model="m"))
    emit(ev.TextDelta(session_id=sid, turn_id=turn, step=1, text="Running"))
    calls = tuple(ToolCall(c.id + turn, c.name, c.raw_arguments, c.arguments) for c in CALLS)
    await store.commit(sid, turn, [AssistantMessage((TextPart("Running"), *calls))])
    emit(
        ev.AssistantMessageCommitted(
            session_id=sid,
            turn_id=turn,
            step=1,
            text="Running",
            tool_calls=tuple((c.id, c.name, c.arguments) for c in calls),
        )
    )
    if not finish:
        await store.mark_call_started(sid, turn, calls[0].id)
        return seq
    for c in calls:
        await store.mark_call_started(sid, turn, c.id)
        emit(
            ev.ToolCallStarted(
                session_id=sid, turn_id=turn, call_id=c.id, name=c.name, tool_id=c.name
            )
        )
        result = ToolResult(
            c.id, c.name, ToolStatus.OK, f"out {c.id}", started=True, details=freeze({"exit": 0})
        )
        await store.commit(sid, turn, [result])
        emit(
            ev.ToolCallFinished(
                session_id=sid,
                turn_id=turn,
                call_id=c.id,
                name=c.name,
                status=ToolStatus.OK,
                content=result.content,
                started=True,
            )
        )
    await store.commit(sid, turn, [AssistantMessage((TextPart(f"Finished {prompt}"),))])
    emit(
        ev.AssistantMessageCommitted(
            session_id=sid, turn_id=turn, step=2, text=f"Finished {prompt}"
        )
    )
    await store.end_turn(sid, turn, TurnOutcome.COMPLETED, "end_turn")
    emit(
        ev.TurnEnded(
            session_id=sid, turn_id=turn, outcome=TurnOutcome.COMPLETED, reason="", steps=2
        )
    )
    return seq
