"""Waiting for a person to approve a tool call, answered by whichever front end is first.

`ApprovalBroker.request()` registers a pending request, lets the caller announce it (emit
`PermissionRequested`) before any checkpoint, and waits. Any front end attached to the
session (TUI, ACP client, dashboard) answers with `answer(request_id, decision)`:

- the first answer wins; a later one raises `ApprovalAlreadyResolved`, which carries the
  decision that won, so the front end can show it;
- when the waiting task is cancelled (the turn was cancelled, I4), the request resolves as
  `cancelled`, `trio.Cancelled` propagates, and answers that arrive afterwards are rejected
  the same way;
- an id the broker never issued raises `UnknownApprovalRequest`.

The broker decides nothing about rules: the caller turns `allow_always` into a session
rule (`PermissionPolicy.allow_for_session`) or a saved one (`config.edit.save_allow_rule`).
"""

from __future__ import annotations

import enum
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from rawtrio.errors import RawtrioError
from rawtrio.frozen import FrozenJSON, empty, freeze

#: How many resolved requests are remembered to reject late answers clearly.
REMEMBER_RESOLVED: Final = 1000


class ApprovalKind(enum.StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    DENY = "deny"
    CANCELLED = "cancelled"


class AlwaysScope(enum.StrEnum):
    SESSION = "session"
    #: Saved as an allow rule in the project config.
    PROJECT = "project"


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    kind: ApprovalKind
    scope: AlwaysScope = AlwaysScope.SESSION
    #: With `deny`: a note the model is given with the denial.
    message: str | None = None
    #: Which front end answered (free text: "tui", "acp:<client>", …).
    answered_by: str = ""

    @property
    def allowed(self) -> bool:
        return self.kind in (ApprovalKind.ALLOW_ONCE, ApprovalKind.ALLOW_ALWAYS)

    @staticmethod
    def allow_once(by: str = "") -> ApprovalDecision:
        return ApprovalDecision(ApprovalKind.ALLOW_ONCE, answered_by=by)

    @staticmethod
    def allow_always(scope: AlwaysScope = AlwaysScope.SESSION, by: str = "") -> ApprovalDecision:
        return ApprovalDecision(ApprovalKind.ALLOW_ALWAYS, scope, answered_by=by)

    @staticmethod
    def deny(message: str | None = None, by: str = "") -> ApprovalDecision:
        return ApprovalDecision(ApprovalKind.DENY, message=message, answered_by=by)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    request_id: str
    call_id: str
    tool_id: str
    summary: str
    arguments: FrozenJSON = field(default_factory=empty)
    options: tuple[str, ...] = ("allow_once", "allow_always", "deny")


class ApprovalError(RawtrioError):
    def __init__(self, request_id: str, message: str) -> None:
        self.request_id = request_id
        super().__init__(message)


class UnknownApprovalRequest(ApprovalError):
    def __init__(self, request_id: str) -> None:
        super().__init__(request_id, f"no permission request with id {request_id!r}")


class ApprovalAlreadyResolved(ApprovalError):
    def __init__(self, request_id: str, resolution: ApprovalDecision) -> None:
        self.resolution = resolution
        how = "was cancelled" if resolution.kind is ApprovalKind.CANCELLED else "was answered"
        by = f" by {resolution.answered_by}" if resolution.answered_by else ""
        super().__init__(
            request_id, f"permission request {request_id} {how} already ({resolution.kind}{by})"
        )


class _Pending:
    def __init__(self, request: ApprovalRequest) -> None:
        self.request = request
        self.decision: ApprovalDecision | None = None
        self.done = trio.Event()


class ApprovalBroker:
    """One per session. Not thread-safe: call it from the session's trio run."""

    def __init__(self, *, remember: int = REMEMBER_RESOLVED) -> None:
        self._pending: dict[str, _Pending] = {}
        self._resolved: OrderedDict[str, ApprovalDecision] = OrderedDict()
        self._remember = remember

    def pending(self) -> tuple[ApprovalRequest, ...]:
        """Requests still waiting (for a front end that attaches late)."""
        return tuple(p.request for p in self._pending.values())

    async def request(
        self,
        *,
        call_id: str,
        tool_id: str,
        summary: str,
        arguments: Mapping[str, Any] | None = None,
        announce: Callable[[ApprovalRequest], object] | None = None,
        request_id: str | None = None,
    ) -> ApprovalDecision:
        """Wait for the first answer. `announce(request)` runs before the wait starts."""
        rid = request_id or uuid.uuid4().hex
        if rid in self._pending or rid in self._resolved:
            raise ValueError(f"permission request id {rid!r} is already in use")
        pending = _Pending(
            ApprovalRequest(rid, call_id, tool_id, summary, freeze(dict(arguments or {})))
        )
        self._pending[rid] = pending
        try:
            if announce is not None:
                announce(pending.request)
            await pending.done.wait()
        except trio.Cancelled:
            if pending.decision is None:
                self._resolve(pending, ApprovalDecision(ApprovalKind.CANCELLED))
            raise
        finally:
            if pending.decision is None:  # announce failed: nobody can answer it now
                self._resolve(pending, ApprovalDecision(ApprovalKind.CANCELLED))
        assert pending.decision is not None
        return pending.decision

    def answer(self, request_id: str, decision: ApprovalDecision) -> None:
        """Resolve a pending request; raises if it is unknown or already resolved."""
        if decision.kind is ApprovalKind.CANCELLED:
            raise ValueError("cancelled is not an answer; cancel the turn instead")
        pending = self._pending.get(request_id)
        if pending is None:
            resolved = self._resolved.get(request_id)
            if resolved is not None:
                raise ApprovalAlreadyResolved(request_id, resolved)
            raise UnknownApprovalRequest(request_id)
        self._resolve(pending, decision)

    def _resolve(self, pending: _Pending, decision: ApprovalDecision) -> None:
        rid = pending.request.request_id
        pending.decision = decision
        self._pending.pop(rid, None)
        self._resolved[rid] = decision
        while len(self._resolved) > self._remember:
            self._resolved.popitem(last=False)
        pending.done.set()
