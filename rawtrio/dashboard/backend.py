"""The dashboard's session operations, on an `AcpAgent` (docs/dashboard-api.md).

The dashboard is one more front end of the agent that serves ACP: the host's
(`rawtrio serve --dashboard`), or one of its own (`rawtrio dashboard`). A session the page
works with is the agent's `LiveSession` — the one an editor or an attached terminal is on
— so opening, joining, the event fan-out and its resync from the store, permission
relays and closing a session no front end is left on are the agent's code, not copies.
What is the dashboard's own: turning requests into those operations, client request ids
(`operations.py`) and the answers' shapes (`models.py`).

A session is opened in this runtime only when an operation needs it live (a turn, a
compaction, a mode or model switch); reading one (detail, history, usage, the event
stream's replay) never takes its writer lease.

Tasks: the followers of operations (waiting for a turn's or a compaction's end) run in the
nursery handed to `Backend`, which the server owns; they end with it.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Final, Literal

import trio

from rawtrio import __version__
from rawtrio.acp.agent import AUTH_REQUIRED, AcpAgent
from rawtrio.acp.extensions import record_json, session_info
from rawtrio.acp.jsonrpc import RESOURCE_NOT_FOUND, RpcError
from rawtrio.acp.live import LiveSession
from rawtrio.context.accounting import usage_to_json
from rawtrio.dashboard.errors import ApiError, from_rawtrio, unknown_session
from rawtrio.dashboard.operations import Operation, Operations, fingerprint
from rawtrio.errors import RawtrioError, SessionClosed, TurnInProgress
from rawtrio.frozen import thaw
from rawtrio.permissions.approval import AlwaysScope, ApprovalDecision, ApprovalKind
from rawtrio.store.base import SessionRecord

log = logging.getLogger(__name__)

API_VERSION: Final = 1
PAGE_MAX: Final = 100
PAGE_DEFAULT: Final = 50
#: Seconds between `: ping` lines of an idle event stream.
HEARTBEAT_S: Final = 15.0
#: How many hits a session search reads from the store before paging them.
SEARCH_HITS: Final = 1000
MODES: Final = ("default", "accept-edits", "plan", "bypass")
DECISIONS: Final = ("allow_once", "allow_always", "deny")
#: Who answered a permission request, as the other front ends are told.
ANSWERED_BY: Final = "dashboard"
_OPEN_TRIES: Final = 3

Mode = Literal["standalone", "host"]


def _iso(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat().replace("+00:00", "Z")


def encode_cursor(*key: Any) -> str:
    raw = json.dumps(list(key), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str) -> list[Any]:
    """The key a cursor of `kind` holds; 400 `invalid_cursor` for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        key = None
    if not (isinstance(key, list) and len(key) == 3 and key[0] == kind):
        raise _bad_cursor()
    return key


def _bad_cursor() -> ApiError:
    return ApiError(400, "invalid_cursor", "the cursor is not one this server gave out")


def _words(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"\w+", text)]


class Backend:
    def __init__(
        self,
        agent: AcpAgent,
        nursery: trio.Nursery,
        *,
        mode: Mode,
        default_cwd: Path,
        heartbeat_s: float = HEARTBEAT_S,
        max_body_bytes: int,
    ) -> None:
        self.agent = agent
        self.runtime = agent.runtime
        self.mode: Mode = mode
        self.default_cwd = default_cwd
        self.heartbeat_s = heartbeat_s
        self.max_body_bytes = max_body_bytes
        self.operations = Operations()
        self._nursery = nursery
        #: Requests being answered, event streams open now, and the peers those watch
        #: sessions with (by `id`): a host is not idle while any is there.
        self.requests = 0
        self.streams = 0
        self.stream_peers: set[int] = set()

    # --- sessions --------------------------------------------------------------------

    def live(self, session_id: str) -> LiveSession | None:
        """The session when it is live in this runtime."""
        live = self.agent.sessions.get(session_id)
        return live if live is not None and not live.session.closed else None

    async def record(self, session_id: str) -> SessionRecord:
        try:
            return await self.runtime.get_session(session_id)
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None

    async def open(self, session_id: str) -> LiveSession:
        """The session, live: joined when it is, opened from the store when not (its
        options resolved for its folder as for any ACP client of this agent)."""
        live = self.live(session_id)
        if live is not None:
            return live
        record = await self.record(session_id)
        try:
            return await self.agent.open(session_id, Path(record.cwd), [])
        except RpcError as exc:
            raise _agent_error(exc, session_id) from None
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None

    def summary(self, record: SessionRecord) -> dict[str, Any]:
        live = self.live(record.id)
        return {
            **record_json(record),
            "live": live is not None,
            "running": live.session.running_turn if live is not None else None,
        }

    async def detail(self, session_id: str) -> dict[str, Any]:
        record = await self.record(session_id)
        out = self.summary(record)
        live = self.live(session_id)
        if live is None:
            totals = await self._stored_usage(session_id)
            out.update(
                mode=None,
                models=[],
                usage={**usage_to_json(totals), "context_window": None},
                pending_permissions=[],
                last_seq=await self.runtime.last_seq(session_id),
            )
            return out
        session = live.session
        info = session_info(session)
        out.update(
            mode=info["mode"],
            models=info["models"],
            usage=info["usage"],
            pending_permissions=[
                {
                    "request_id": r.request_id,
                    "call_id": r.call_id,
                    "tool_id": r.tool_id,
                    "summary": r.summary,
                    "arguments": thaw(r.arguments),
                    "options": list(r.options),
                }
                for r in session.approvals.pending()
            ],
            last_seq=session.recorder.seq,
        )
        return out

    async def _stored_usage(self, session_id: str) -> Any:
        try:
            return await self.runtime.usage(session_id)
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None

    async def list_sessions(
        self, *, limit: int, cursor: str | None, query: str | None, cwd: str | None
    ) -> dict[str, Any]:
        """A page of sessions: most recently updated first, or with `query` best match
        first. Keyset: the cursor holds the last item's key, so adding sessions meanwhile
        never repeats or skips one."""
        try:
            records = await self.runtime.list_sessions(cwd=cwd)
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None
        if query is None:
            records.sort(key=lambda r: (-r.updated_at, r.id))
            if cursor is not None:
                _, updated, last_id = decode_cursor(cursor, "u")
                if not isinstance(updated, int | float) or not isinstance(last_id, str):
                    raise _bad_cursor()
                after = (-updated, last_id)
                records = [r for r in records if (-r.updated_at, r.id) > after]
            page = records[:limit]
            more = len(records) > limit
            next_cursor = encode_cursor("u", page[-1].updated_at, page[-1].id) if more else None
            return {"sessions": [self.summary(r) for r in page], "next_cursor": next_cursor}
        ranked = await self._search(records, query, cwd)
        start = 0
        if cursor is not None:
            _, index, last_id = decode_cursor(cursor, "q")
            if not isinstance(index, int) or index < 0:
                raise _bad_cursor()
            ids = [r.id for r, _ in ranked]
            start = ids.index(last_id) + 1 if last_id in ids else index
        page_items = ranked[start : start + limit]
        more = start + limit < len(ranked)
        next_cursor = (
            encode_cursor("q", start + len(page_items), page_items[-1][0].id) if more else None
        )
        return {
            "sessions": [{**self.summary(r), "match": m} for r, m in page_items],
            "next_cursor": next_cursor,
        }

    async def _search(
        self, records: list[SessionRecord], query: str, cwd: str | None
    ) -> list[tuple[SessionRecord, dict[str, Any] | None]]:
        """Sessions whose display history matches (best first, with the first matching
        passage), then those whose title or folder holds every word (most recent first)."""
        by_id = {r.id: r for r in records}
        try:
            hits = await self.runtime.search(query, cwd=cwd, limit=SEARCH_HITS)
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None
        out: list[tuple[SessionRecord, dict[str, Any] | None]] = []
        seen: set[str] = set()
        for hit in hits:
            record = by_id.get(hit.session_id)
            if record is None or hit.session_id in seen:
                continue
            seen.add(hit.session_id)
            match = {"seq": hit.seq, "event_type": hit.event_type, "snippet": hit.snippet}
            out.append((record, match))
        words = _words(query)
        for record in sorted(records, key=lambda r: (-r.updated_at, r.id)):
            if record.id in seen or not words:
                continue
            text = f"{record.title} {record.cwd}".lower()
            if all(w in text for w in words):
                out.append((record, None))
        return out

    async def create_session(self, cwd: str | None, title: str | None) -> dict[str, Any]:
        folder = Path(cwd) if cwd is not None else self.default_cwd
        if not folder.is_absolute() or not folder.is_dir():
            what = "is not an absolute path" if not folder.is_absolute() else "is not a folder"
            message = f"cwd: {str(folder)!r} {what}"
            raise ApiError(
                422,
                "validation_failed",
                message,
                {"errors": [{"loc": ["body", "cwd"], "msg": message, "type": "value_error"}]},
            )
        try:
            options = await self.agent.options(folder, [])
            live = await self.agent.create(options)
            if title is not None:
                await self.runtime.rename_session(live.id, title)
                live.title = title
        except RpcError as exc:
            raise _agent_error(exc, "") from None
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None
        return await self.detail(live.id)

    async def rename(self, session_id: str, title: str) -> dict[str, Any]:
        await self.record(session_id)
        try:
            await self.runtime.rename_session(session_id, title)
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None
        live = self.live(session_id)
        if live is not None and live.title != title:  # editors on it are told (ACP)
            live.title = title
            record = await self.record(session_id)
            live.broadcast(
                {
                    "sessionUpdate": "session_info_update",
                    "title": title,
                    "updatedAt": _iso(record.updated_at),
                }
            )
        return await self.detail(session_id)

    async def delete(self, session_id: str) -> None:
        """Delete a stored session. Refused while a turn runs in it or another front end
        (an editor, a terminal) is on it; the dashboard's own event streams end."""
        await self.record(session_id)
        live = self.live(session_id)
        if live is not None:
            if live.session.running_turn is not None:
                raise ApiError(
                    409,
                    "session_in_use",
                    f"session {session_id} is running turn {live.session.running_turn}: "
                    "cancel it first",
                    {"running_turn": live.session.running_turn},
                )
            others = len(live.attached) + sum(
                1 for key in live.watchers if key not in self.stream_peers
            )
            if others:
                raise ApiError(
                    409,
                    "session_in_use",
                    f"session {session_id} is open in another front end",
                    {"front_ends": others},
                )
        try:
            await self.runtime.delete_session(session_id)
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None

    async def history(
        self, session_id: str, *, cursor: str | None, limit: int, newest_first: bool
    ) -> dict[str, Any]:
        from rawtrio.events import event_to_json

        live = self.live(session_id)
        try:
            # The last seq first: the page then holds everything up to it.
            last = live.session.recorder.seq if live else await self.runtime.last_seq(session_id)
            page = await self.runtime.history(
                session_id, cursor=cursor, limit=limit, newest_first=newest_first
            )
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None
        return {
            "events": [event_to_json(e) for e in page.events],
            "next_cursor": page.next_cursor,
            "last_seq": last,
        }

    async def usage(self, session_id: str) -> dict[str, Any]:
        await self.record(session_id)
        live = self.live(session_id)
        totals = live.session.usage if live is not None else await self._stored_usage(session_id)
        return {
            "session_id": session_id,
            "live": live is not None,
            "usage": {**usage_to_json(totals), "context_window": totals.context_window},
        }

    # --- operations ------------------------------------------------------------------

    async def submit(self, session_id: str, request_id: str, text: str) -> tuple[Operation, bool]:
        """Start a turn (True) or find the one this request id started (False)."""
        async with self.operations.claim(request_id, "turn", session_id, text) as known:
            if known is not None:
                return known, False
            live = await self.open(session_id)
            for attempt in range(_OPEN_TRIES):
                try:
                    turn_id = await live.session.submit(text, client_request_id=request_id)
                    break
                except SessionClosed:
                    # Closed for want of a front end just now: open it again.
                    if attempt == _OPEN_TRIES - 1:
                        raise ApiError(
                            503, "shutting_down", f"session {session_id} is closing"
                        ) from None
                    live = await self.open(session_id)
                except TurnInProgress as exc:
                    raise _busy(live, exc) from None
                except RawtrioError as exc:
                    raise from_rawtrio(exc) from None
            op = Operation(
                request_id,
                "turn",
                session_id,
                fingerprint("turn", session_id, text),
                turn_id=turn_id,
            )
            self.operations.add(op)
            self._nursery.start_soon(self._follow_turn, live, op)
            return op, True

    async def _follow_turn(self, live: LiveSession, op: Operation) -> None:
        assert op.turn_id is not None
        try:
            ended = await live.session.wait_turn(op.turn_id)
        except KeyError:  # ended before this server knew it (a request id the store knew)
            op.end(None, "the turn ended before this server followed it: see the history")
        except Exception as exc:  # the store failed meanwhile: the turn's end is unknown
            log.exception("following turn %s failed", op.turn_id)
            op.end(None, f"could not follow the turn: {exc}")
        else:
            op.end(ended.outcome.value, ended.reason)

    async def compact(
        self, session_id: str, request_id: str, focus: str | None
    ) -> tuple[Operation, bool]:
        async with self.operations.claim(request_id, "compact", session_id, focus) as known:
            if known is not None:
                return known, False
            live = await self.open(session_id)
            op = Operation(
                request_id, "compact", session_id, fingerprint("compact", session_id, focus)
            )
            refused: list[RawtrioError] = []
            calling = trio.Event()
            self._nursery.start_soon(self._run_compaction, live, op, focus, calling, refused)
            # `calling` is set right before `Session.compact` is called, in the same step:
            # its checks (a turn or a compaction running, the session closed) raise before
            # its first checkpoint. So once this task runs again, either `refused` holds
            # that error or the compaction is under way.
            await calling.wait()
            if refused:
                exc = refused[0]
                if isinstance(exc, TurnInProgress):
                    raise _busy(live, exc)
                raise from_rawtrio(exc)
            self.operations.add(op)
            return op, True

    async def _run_compaction(
        self,
        live: LiveSession,
        op: Operation,
        focus: str | None,
        calling: trio.Event,
        refused: list[RawtrioError],
    ) -> None:
        calling.set()
        try:
            ended = await live.session.compact(focus or None)
        except RawtrioError as exc:
            refused.append(exc)
            op.end("error", str(exc))
        except Exception as exc:  # a bug: the compaction recorded its own ending
            log.exception("compaction of session %s failed", live.id)
            op.end("error", f"internal error: {type(exc).__name__}")
        else:
            op.end(ended.outcome, ended.reason)

    def cancel_operation(self, operation_id: str, reason: str | None) -> tuple[Operation, bool]:
        """Cancel the turn or compaction if it still runs (True), else nothing (False)."""
        op = self.operations.get(operation_id)
        if op.done.is_set():
            return op, False
        op.cancel_requested = True
        live = self.live(op.session_id)
        if live is not None:
            why = reason or "cancelled from the dashboard"
            running = live.session.running_turn
            if (op.kind == "turn" and running == op.turn_id) or (
                op.kind == "compact" and running is None
            ):
                live.session.cancel(why)
        return op, True

    async def cancel_session(self, session_id: str, reason: str | None) -> bool:
        await self.record(session_id)
        live = self.live(session_id)
        if live is None:
            return False
        return live.session.cancel(reason or "cancelled from the dashboard")

    def answer_permission(
        self, session_id: str, request_id: str, decision: str, scope: str, message: str | None
    ) -> None:
        live = self.live(session_id)
        if live is None:
            raise ApiError(
                404,
                "unknown_permission_request",
                f"no pending permission request {request_id!r}: session {session_id} is "
                "not live in this server",
                {"request_id": request_id},
            )
        answer = ApprovalDecision(
            ApprovalKind(decision),
            AlwaysScope(scope),
            message=message if decision == "deny" else None,
            answered_by=ANSWERED_BY,
        )
        try:  # the first answer from any front end wins
            live.session.answer_permission(request_id, answer)
        except RawtrioError as exc:
            raise from_rawtrio(exc) from None

    async def set_mode(self, session_id: str, mode: str) -> dict[str, Any]:
        live = await self.open(session_id)
        live.session.set_mode(mode)  # mode_changed tells every front end
        return await self.detail(session_id)

    async def set_model(self, session_id: str, model: str) -> dict[str, Any]:
        live = await self.open(session_id)
        names = list(live.session.model_names)
        if model not in names:
            message = f"model: {model!r} is not configured (one of {', '.join(names)})"
            raise ApiError(
                422,
                "validation_failed",
                message,
                {"errors": [{"loc": ["body", "model"], "msg": message, "type": "value_error"}]},
            )
        if model != live.session.model_name:
            try:
                await live.session.set_model(model)  # model_changed tells every front end
            except TurnInProgress as exc:
                raise _busy(live, exc) from None
            except RawtrioError as exc:
                raise from_rawtrio(exc) from None
        return await self.detail(session_id)

    # --- the page's start -------------------------------------------------------------

    def bootstrap(self) -> dict[str, Any]:
        return {
            "api_version": API_VERSION,
            "version": __version__,
            "mode": self.mode,
            "pid": os.getpid(),
            "default_cwd": str(self.default_cwd),
            "limits": {
                "max_body_bytes": self.max_body_bytes,
                "page_max": PAGE_MAX,
                "page_default": PAGE_DEFAULT,
                "heartbeat_s": self.heartbeat_s,
            },
            "modes": list(MODES),
            "permission_options": list(DECISIONS),
        }


def _busy(live: LiveSession, exc: TurnInProgress) -> ApiError:
    running = live.session.running_turn
    if running is None:
        return ApiError(409, "session_busy", str(exc))
    return ApiError(409, "turn_in_progress", str(exc), {"running_turn": running})


def _agent_error(exc: RpcError, session_id: str) -> ApiError:
    """An error of the agent's open/create (ACP's codes) as the API's."""
    if exc.code == RESOURCE_NOT_FOUND:
        return unknown_session(session_id)
    if exc.code == AUTH_REQUIRED or exc.message.startswith("configuration error"):
        return ApiError(503, "not_configured", exc.message)
    if "open in another process" in exc.message:  # SessionLocked, as the agent words it
        return ApiError(409, "session_locked", exc.message, {"session_id": session_id})
    return ApiError(500, "internal", exc.message)
