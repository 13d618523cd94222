"""An in-memory `SessionStore`: the foundation's store, and a fast fake for tests.

Same semantics as the durable store (`SqliteStore`), minus durability and processes:
the writer lease is per store object, cursors use the same opaque encoding, commits are
atomic list extensions, search matches words by substring instead of FTS5.
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
from rawtrio.events import Event, Notice
from rawtrio.messages import Message, UserMessage
from rawtrio.store import codec, export, recovery
from rawtrio.store.base import (
    ExportFormat,
    HistoryPage,
    ParentLink,
    SearchHit,
    SessionRecord,
    TurnRecord,
    with_parent,
)
from rawtrio.store.search import matches
from rawtrio.store.titles import title_from_prompt


@dataclass
class _Session:
    record: SessionRecord
    context: list[Message] = field(default_factory=list)
    #: Per context message: the last display event stored before its commit (for forks).
    after_seq: list[int] = field(default_factory=list)
    #: Per context message: None while in the model context; once a compaction replaced
    #: it, the position of the first message of the context that replaced it (I7: kept).
    replaced_at: list[int | None] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    turns: dict[str, TurnRecord] = field(default_factory=dict)
    started_calls: set[str] = field(default_factory=set)
    state: dict[str, Any] = field(default_factory=dict)


class MemoryStore:
    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._writers: set[str] = set()

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
        parent: ParentLink | None = None,
    ) -> SessionRecord:
        await trio.lowlevel.checkpoint()
        now = time.time()
        record = SessionRecord(session_id, title, cwd, system_prompt, provider, model, now, now)
        if parent is not None:
            record = with_parent(record, parent)
        self._sessions[session_id] = _Session(record)
        self._writers.add(session_id)
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
            if (cwd is None or s.record.cwd == cwd) and s.record.parent_id is None
        ]
        return sorted(records, key=lambda r: r.updated_at, reverse=True)

    async def list_children(self, parent_id: str) -> list[SessionRecord]:
        await trio.lowlevel.checkpoint()
        records = [
            dataclasses.replace(s.record, message_count=len(s.context))
            for s in self._sessions.values()
            if s.record.parent_id == parent_id
        ]
        return sorted(records, key=lambda r: r.created_at)

    async def rename_session(self, session_id: str, title: str) -> None:
        await trio.lowlevel.checkpoint()
        s = self._get(session_id)
        s.record = dataclasses.replace(s.record, title=title)

    async def delete_session(self, session_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self._get(session_id)
        del self._sessions[session_id]
        self._writers.discard(session_id)

    async def load_context(self, session_id: str) -> list[Message]:
        await trio.lowlevel.checkpoint()
        return _active(self._get(session_id))

    async def replace_context(
        self, session_id: str, turn_id: str | None, messages: Sequence[Message]
    ) -> None:
        await trio.lowlevel.checkpoint()
        s = self._get(session_id)
        at = len(s.context)
        s.replaced_at = [at if r is None else r for r in s.replaced_at]
        self._append(s, messages)

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
        self._append(self._get(session_id), messages)

    def _append(self, s: _Session, messages: Sequence[Message]) -> None:
        s.context.extend(messages)
        s.after_seq.extend([s.events[-1].seq if s.events else 0] * len(messages))
        s.replaced_at.extend([None] * len(messages))
        title = s.record.title
        first_user = next((m for m in messages if isinstance(m, UserMessage)), None)
        if not title and first_user is not None:
            title = title_from_prompt(first_user.text)
        s.record = dataclasses.replace(s.record, updated_at=time.time(), title=title)

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
        limit = max(1, limit)
        if newest_first:
            bound = codec.decode_cursor(cursor, True) if cursor else 2**62
            chosen = [e for e in reversed(events) if e.seq < bound][: limit + 1]
        else:
            bound = codec.decode_cursor(cursor, False) if cursor else -1
            chosen = [e for e in events if e.seq > bound][: limit + 1]
        more = len(chosen) > limit
        chosen = chosen[:limit]
        next_cursor = codec.encode_cursor(newest_first, chosen[-1].seq) if more else None
        return HistoryPage(tuple(chosen), next_cursor)

    async def last_seq(self, session_id: str) -> int:
        await trio.lowlevel.checkpoint()
        events = self._get(session_id).events
        return events[-1].seq if events else 0

    async def open_for_write(self, session_id: str) -> recovery.RecoveryReport:
        await trio.lowlevel.checkpoint()
        s = self._get(session_id)
        if session_id in self._writers:
            return recovery.RecoveryReport()
        self._writers.add(session_id)
        return self._repair(s)

    def _repair(self, s: _Session) -> recovery.RecoveryReport:
        results = recovery.missing_results(_active(s), s.started_calls)
        turns = [t.id for t in s.turns.values() if t.outcome is None]
        if not results and not turns:
            return recovery.RecoveryReport()
        turn_id = turns[-1] if turns else None
        self._append(s, results)
        first = s.events[-1].seq + 1 if s.events else 1
        s.events.extend(recovery.recovery_events(s.record.id, turn_id, results, turns, first))
        for t in turns:
            s.turns[t] = dataclasses.replace(
                s.turns[t], outcome=TurnOutcome.INTERRUPTED, reason=recovery.REASON
            )
        return recovery.RecoveryReport(tuple(turns), tuple(results))

    async def close_session(self, session_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self._writers.discard(session_id)

    async def fork_session(
        self,
        source_id: str,
        *,
        session_id: str,
        up_to: int | None = None,
        title: str | None = None,
    ) -> SessionRecord:
        await trio.lowlevel.checkpoint()
        src = self._get(source_id)
        n = len(src.context)
        keep = n if up_to is None else max(0, min(up_to, n))
        while keep < n and src.context[keep].role == "tool":
            keep += 1
        bound = src.after_seq[keep] if keep < n else (src.events[-1].seq if src.events else 0)
        kept = [e for e in src.events if e.seq <= bound]
        while kept and kept[-1].type in _TRANSIENT:
            kept.pop()
        now = time.time()
        record = dataclasses.replace(
            src.record,
            id=session_id,
            title=title or f"{src.record.title} (fork)",
            created_at=now,
            updated_at=now,
            message_count=0,
        )
        fork = _Session(
            record,
            context=src.context[:keep],
            after_seq=src.after_seq[:keep],
            replaced_at=[r if r is not None and r < keep else None for r in src.replaced_at[:keep]],
            events=[dataclasses.replace(e, session_id=session_id) for e in kept],
            started_calls=set(src.started_calls),
            state=copy.deepcopy(src.state),
        )
        self._sessions[session_id] = fork
        self._writers.add(session_id)
        self._repair(fork)
        fork.events.append(
            Notice(
                session_id=session_id,
                seq=(fork.events[-1].seq if fork.events else 0) + 1,
                level="info",
                text=f"forked from session {source_id} ({src.record.title or 'untitled'}) "
                f"after message {keep} of {n}",
            )
        )
        return await self.get_session(session_id)

    async def prompt_position(self, session_id: str, turn_id: str) -> int | None:
        await trio.lowlevel.checkpoint()
        s = self._get(session_id)
        seq = next(
            (e.seq for e in s.events if e.turn_id == turn_id and e.type == "user_message"), None
        )
        if seq is None:
            return None
        return max(0, sum(1 for a in s.after_seq if a < seq) - 1)

    async def export_session(self, session_id: str, fmt: ExportFormat) -> str:
        record = await self.get_session(session_id)
        s = self._get(session_id)
        return export.export(fmt, record, _active(s), s.events)

    async def search(
        self, query: str, *, cwd: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        await trio.lowlevel.checkpoint()
        hits: list[SearchHit] = []
        for s in self._sessions.values():
            if cwd is not None and s.record.cwd != cwd:
                continue
            for e in s.events:
                text = codec.searchable_text(e)
                if text is not None and matches(query, text):
                    hits.append(
                        SearchHit(
                            s.record.id, s.record.title, s.record.cwd, e.seq, e.type, text[:200]
                        )
                    )
        return hits[: max(1, limit)]

    async def expire_sessions(self, retention_days: float) -> list[str]:
        await trio.lowlevel.checkpoint()
        if retention_days <= 0:
            return []
        before = time.time() - retention_days * 86400
        gone = [
            sid
            for sid, s in self._sessions.items()
            if s.record.updated_at < before and sid not in self._writers
        ]
        for sid in gone:
            del self._sessions[sid]
        return gone

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


def _active(s: _Session) -> list[Message]:
    """The model context: the messages no compaction replaced."""
    return [m for m, r in zip(s.context, s.replaced_at, strict=True) if r is None]


_TRANSIENT = ("step_started", "text_delta", "thinking_delta", "tool_call_announced", "usage")
