"""Turns and compactions submitted with a client request id (docs/dashboard-api.md,
"POST /api/sessions/{id}/turns").

The page picks the id (a UUID) and may send the same request again after a lost answer:

- the first request with an id starts the operation and gets `202` + its receipt;
- the same id again with the same session, kind and input gets the first receipt (its
  status now) and starts nothing;
- the same id with anything else is `409 request_id_reused`.

Requests with one id are served one at a time (`claim`), so two copies racing each other
still start one operation. The receipts of the last `remember` operations are kept in
this process; a turn's client request id is also stored with the turn
(`Session.submit(client_request_id=...)`), so a turn is never started twice for one id
even across a restart of the server.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import trio

from rawtrio.dashboard.errors import ApiError

REMEMBER: Final = 1000
Kind = Literal["turn", "compact"]


def fingerprint(kind: Kind, session_id: str, payload: Any) -> str:
    """What makes two requests with one id the same request."""
    text = json.dumps([kind, session_id, payload], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Operation:
    client_request_id: str
    kind: Kind
    session_id: str
    fingerprint: str
    id: str = field(default_factory=lambda: f"op_{uuid.uuid4().hex}")
    turn_id: str | None = None
    outcome: str | None = None
    reason: str | None = None
    accepted_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    cancel_requested: bool = False
    done: trio.Event = field(default_factory=trio.Event)

    def end(self, outcome: str | None, reason: str | None) -> None:
        if self.done.is_set():
            return
        self.outcome, self.reason = outcome, reason
        self.ended_at = time.time()
        self.done.set()

    def receipt(self) -> dict[str, Any]:
        return {
            "operation_id": self.id,
            "client_request_id": self.client_request_id,
            "kind": self.kind,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "status": "ended" if self.done.is_set() else "running",
            "outcome": self.outcome,
            "reason": self.reason,
            "accepted_at": self.accepted_at,
            "ended_at": self.ended_at,
            "cancel_requested": self.cancel_requested,
        }


class Operations:
    def __init__(self, remember: int = REMEMBER) -> None:
        self._remember = remember
        self._by_request: OrderedDict[str, Operation] = OrderedDict()
        self._by_id: dict[str, Operation] = {}
        self._claims: dict[str, trio.Lock] = {}

    @asynccontextmanager
    async def claim(
        self, client_request_id: str, kind: Kind, session_id: str, payload: Any
    ) -> AsyncIterator[Operation | None]:
        """Serve one request with this id at a time. Yields the operation an earlier
        request with this id and the same input started (the caller answers with its
        receipt), or None (the caller starts one and `add`s it). 409 when the id was used
        for something else."""
        lock = self._claims.setdefault(client_request_id, trio.Lock())
        try:
            async with lock:
                known = self._by_request.get(client_request_id)
                if known is not None and known.fingerprint != fingerprint(
                    kind, session_id, payload
                ):
                    raise ApiError(
                        409,
                        "request_id_reused",
                        f"client_request_id {client_request_id!r} was used for another "
                        "request: send a new id for a new operation",
                        {"operation_id": known.id},
                    )
                yield known
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._claims.pop(client_request_id, None)

    def add(self, op: Operation) -> Operation:
        self._by_request[op.client_request_id] = op
        self._by_id[op.id] = op
        while len(self._by_request) > self._remember:
            _, old = self._by_request.popitem(last=False)
            self._by_id.pop(old.id, None)
        return op

    def get(self, operation_id: str) -> Operation:
        op = self._by_id.get(operation_id)
        if op is None:
            raise ApiError(
                404,
                "unknown_operation",
                f"no operation {operation_id!r} in this server (it keeps the last "
                f"{self._remember})",
                {"operation_id": operation_id},
            )
        return op
