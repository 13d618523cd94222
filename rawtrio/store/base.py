"""The session store interface: what the runtime persists, and when.

Two records per session (docs/store.md):

- the **model context** — the messages the next request carries, changed only by
  `commit()` (one transaction per commit point of the turn contract) and by compaction
  (`replace_context()`, which keeps the replaced messages, marked);
- the **display history** — every event the user saw (`record_event`), paged with
  opaque cursors and used by subscribers to resync by sequence number.

`record_event` never blocks (an implementation queues the write); `commit` returns once
the messages are durable. Events recorded before a commit are stored before it.

Writing a session needs its writer lease (one process at a time, released by a crash):
`open_for_write` takes it and repairs what a killed writer left (I6); writes take it
implicitly; `close_session` hands it back. Reads never need it.

Implementations: `rawtrio.store.sqlite.SqliteStore` (durable, the default) and
`rawtrio.store.memory.MemoryStore` (tests).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from rawtrio.contracts import TurnOutcome
from rawtrio.events import Event
from rawtrio.messages import Message
from rawtrio.store.recovery import RecoveryReport

ExportFormat = Literal["json", "markdown"]


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    title: str
    cwd: str
    system_prompt: str
    provider: str
    model: str
    created_at: float
    updated_at: float
    message_count: int = 0
    #: A `task` child's link to its parent (docs/contracts.md, The `task` tool): the
    #: parent session, the parent's `task` call, and how deep it nests (top level: 0).
    parent_id: str | None = None
    parent_call_id: str | None = None
    depth: int = 0


@dataclass(frozen=True, slots=True)
class ParentLink:
    """Where a child session hangs: its parent session, the `task` call, its depth (>= 1)."""

    parent_id: str
    parent_call_id: str
    depth: int


@dataclass(frozen=True, slots=True)
class TurnRecord:
    id: str
    client_request_id: str | None
    outcome: TurnOutcome | None
    reason: str


@dataclass(frozen=True, slots=True)
class HistoryPage:
    events: tuple[Event, ...]
    #: Opaque cursor for the next page in the same direction; None at the end.
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class SearchHit:
    session_id: str
    title: str
    cwd: str
    seq: int
    event_type: str
    #: The matching passage, matches wrapped in `[` `]`.
    snippet: str


def with_parent(record: SessionRecord, parent: ParentLink) -> SessionRecord:
    return dataclasses.replace(
        record,
        parent_id=parent.parent_id,
        parent_call_id=parent.parent_call_id,
        depth=parent.depth,
    )


class SessionStore(Protocol):
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
    ) -> SessionRecord: ...

    async def get_session(self, session_id: str) -> SessionRecord:
        """Raises `UnknownSession`."""
        ...

    async def list_sessions(self, *, cwd: str | None = None) -> list[SessionRecord]:
        """Top-level sessions (never a `task` child), most recently updated first."""
        ...

    async def list_children(self, parent_id: str) -> list[SessionRecord]:
        """The `task` children of a session, oldest first."""
        ...

    async def rename_session(self, session_id: str, title: str) -> None: ...

    async def delete_session(self, session_id: str) -> None: ...

    async def load_context(self, session_id: str) -> list[Message]: ...

    async def begin_turn(
        self, session_id: str, turn_id: str, client_request_id: str | None
    ) -> None: ...

    async def find_turn(self, session_id: str, client_request_id: str) -> TurnRecord | None:
        """The turn a client request id already started, for idempotent submits."""
        ...

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        """Append messages to the model context in one durable transaction."""
        ...

    async def replace_context(
        self, session_id: str, turn_id: str | None, messages: Sequence[Message]
    ) -> None:
        """Compaction: make `messages` the model context in one durable transaction. The
        replaced messages are kept (marked, not deleted: I7); the display history is not
        touched."""
        ...

    async def mark_call_started(self, session_id: str, turn_id: str, call_id: str) -> None:
        """Durably note that a call is about to start (crash recovery tells apart calls
        that may have run, `outcome_unknown`, from calls that never did, `cancelled`)."""
        ...

    async def get_state(self, session_id: str, key: str) -> Any:
        """A JSON value stored with the session (e.g. the todo list); None if unset."""
        ...

    async def set_state(self, session_id: str, key: str, value: Any) -> None: ...

    async def end_turn(
        self, session_id: str, turn_id: str, outcome: TurnOutcome, reason: str
    ) -> None: ...

    def record_event(self, event: Event) -> None:
        """Append an event to the display history. Never blocks."""
        ...

    async def events_since(self, session_id: str, seq: int) -> list[Event]:
        """Display events with a sequence number greater than `seq`, in order."""
        ...

    async def history(
        self,
        session_id: str,
        *,
        cursor: str | None = None,
        limit: int = 50,
        newest_first: bool = True,
    ) -> HistoryPage: ...

    async def last_seq(self, session_id: str) -> int: ...

    async def open_for_write(self, session_id: str) -> RecoveryReport:
        """Take the writer lease (`SessionLocked` if another process has it) and repair
        what a killed writer left. Call before loading a session to run turns in it."""
        ...

    async def close_session(self, session_id: str) -> None:
        """Hand back the writer lease (after the session's last write)."""
        ...

    async def fork_session(
        self,
        source_id: str,
        *,
        session_id: str,
        up_to: int | None = None,
        title: str | None = None,
    ) -> SessionRecord:
        """A new session whose context and display history copy the source's first
        `up_to` messages (all when None), extended to the end of a results batch."""
        ...

    async def prompt_position(self, session_id: str, turn_id: str) -> int | None:
        """Where turn `turn_id`'s prompt sits in the model context (positions count the
        messages a compaction replaced): `fork_session(up_to=…)` with it keeps everything
        before the prompt. None when the turn committed no prompt here.

        The prompt is the message committed just before its `user_message` event, so the
        answer is the number of messages stored before that event, less one."""
        ...

    async def export_session(self, session_id: str, fmt: ExportFormat) -> str: ...

    async def search(
        self, query: str, *, cwd: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        """Sessions' display history matching all words of `query`, best first."""
        ...

    async def expire_sessions(self, retention_days: float) -> list[str]:
        """Delete sessions without committed conversation activity for `retention_days`
        (0 keeps everything); skips sessions another process holds. Returns the ids."""
        ...

    async def aclose(self) -> None: ...
