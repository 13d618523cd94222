"""An in-memory `SessionStore`: the foundation's store, and a fast fake for tests.

Same semantics as the durable store (issue: SQLite store), minus durability: keyset
cursors are sequence numbers, commits are atomic list extensions.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from rawtrio.contracts import TurnOutcome
from rawtrio.errors import UnknownSession
from rawtrio.events import Event
from rawtrio.messages import Message
from rawtrio.store.base import HistoryPage, SessionRecord, TurnRecord


@dataclass
class _Session:
    record: SessionRecord
    context: list[Message] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    turns: dict[str, TurnRecord] = field(default_factory=dict)
    started_calls: set[str] = field(default_factory=set)
    state: dict[str, Any] = field(default_factory=dict)


class MemoryStore:
    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def _get(self, session_id: str) -> _Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise UnknownSession(session_id) from None

    async def create_session(
        self,
        *,
        session_id: str,
        cwd: str,
        system_prompt: str,
        provider: str,
        model: str,
        title: str,
    ) -> SessionRecord:
        await trio.lowlevel.checkpoint()
        now = time.time()
        record = SessionRecord(session_id, title, cwd, system_prompt, provider, model, now, now)
        self._sessions[session_id] = _Session(record)
        return record

    async def get_session(self, session_id: str) -> SessionRecord:
        await trio.lowlevel.checkpoint()
        s = self._get(session_id)
        return dataclasses.replace(s.record, message_count=len(s.context))

    async def list_sessions(self, *, cwd: str | None = None) -> list[SessionRecord]:
        await trio.lowlevel.checkpoint()
        records = [
            dataclasses.replace(s.record, message_count=len(s.context))
            for s in self._sessions.values()
            if cwd is None or s.record.cwd == cwd
        ]
        return sorted(records, key=lambda r: r.updated_at, reverse=True)

    async def rename_session(self, session_id: str, title: str) -> None:
        await trio.lowlevel.checkpoint()
        s = self._get(session_id)
        s.record = dataclasses.replace(s.record, title=title)

    async def delete_session(self, session_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self._get(session_id)
        del self._sessions[session_id]

    async def load_context(self, session_id: str) -> list[Message]:
        await trio.lowlevel.checkpoint()
        return list(self._get(session_id).context)

    async def begin_turn(
        self, session_id: str, turn_id: str, client_request_id: str | None
    ) -> None:
        await trio.lowlevel.checkpoint()
        self._get(session_id).turns[turn_id] = TurnRecord(turn_id, client_request_id, None, "")

    async def find_turn(self, session_id: str, client_request_id: str) -> TurnRecord | None:
        await trio.lowlevel.checkpoint()
        for turn in self._get(session_id).turns.values():
            if turn.client_request_id == client_request_id:
                return turn
        return None

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        await trio.lowlevel.checkpoint()
        s = self._get(session_id)
        s.context.extend(messages)
        s.record = dataclasses.replace(s.record, updated_at=time.time())

    async def mark_call_started(self, session_id: str, turn_id: str, call_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self._get(session_id).started_calls.add(call_id)

    async def get_state(self, session_id: str, key: str) -> Any:
        await trio.lowlevel.checkpoint()
        return copy.deepcopy(self._get(session_id).state.get(key))

    async def set_state(self, session_id: str, key: str, value: Any) -> None:
        await trio.lowlevel.checkpoint()
        self._get(session_id).state[key] = copy.deepcopy(value)

    async def end_turn(
        self, session_id: str, turn_id: str, outcome: TurnOutcome, reason: str
    ) -> None:
        await trio.lowlevel.checkpoint()
        s = self._get(session_id)
        turn = s.turns[turn_id]
        if turn.outcome is not None:
            raise RuntimeError(f"turn {turn_id} already has an outcome ({turn.outcome})")
        s.turns[turn_id] = dataclasses.replace(turn, outcome=outcome, reason=reason)

    def turn(self, session_id: str, turn_id: str) -> TurnRecord:
        return self._get(session_id).turns[turn_id]

    def record_event(self, event: Event) -> None:
        s = self._sessions.get(event.session_id)
        if s is not None:
            s.events.append(event)

    async def events_since(self, session_id: str, seq: int) -> list[Event]:
        await trio.lowlevel.checkpoint()
        return [e for e in self._get(session_id).events if e.seq > seq]

    async def history(
        self,
        session_id: str,
        *,
        cursor: str | None = None,
        limit: int = 50,
        newest_first: bool = True,
    ) -> HistoryPage:
        await trio.lowlevel.checkpoint()
        events = self._get(session_id).events
        if newest_first:
            bound = int(cursor) if cursor else len(events) + 1
            chosen = [e for e in reversed(events) if e.seq < bound][:limit]
        else:
            bound = int(cursor) if cursor else 0
            chosen = [e for e in events if e.seq > bound][:limit]
        more = len(chosen) == limit and chosen[-1].seq not in (events[0].seq, events[-1].seq)
        return HistoryPage(tuple(chosen), str(chosen[-1].seq) if chosen and more else None)

    async def last_seq(self, session_id: str) -> int:
        await trio.lowlevel.checkpoint()
        events = self._get(session_id).events
        return events[-1].seq if events else 0

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()
