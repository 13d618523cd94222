"""`rawtrio.host.remote` (the trio client the attached terminal chat uses) against a real
`rawtrio serve`: every `_rawtrio/session/*` and `_rawtrio/sessions/*` operation the chat
needs, approvals answered by the client (first answer wins), and a turn cancelled by a
second front end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from rawtrio import __version__
from rawtrio import events as ev
from rawtrio.acp.jsonrpc import RpcError
from rawtrio.app.choice import Choice
from rawtrio.contracts import TurnOutcome
from rawtrio.errors import SessionClosed, TurnInProgress, UnknownSession, UsageError
from rawtrio.host.client import HostConnection
from rawtrio.host.remote import (
    RemoteApp,
    RemoteOptions,
    RemoteSession,
    open_remote_app,
    remote_error,
)
from rawtrio.permissions.approval import ApprovalDecision, UnknownApprovalRequest
from rawtrio.permissions.rules import PermissionMode
from tests.headless.support import LIVENESS_S
from tests.host.support import KEY, Client, HostProcess, Place


@asynccontextmanager
async def remote(place: Place, mode: str = "bypass") -> AsyncIterator[RemoteApp]:
    conn = HostConnection.connect(place.paths.socket, LIVENESS_S)
    with conn:
        info = conn.initialize(__version__, LIVENESS_S)
        options = RemoteOptions(
            cwd=place.iso.cwd,
            env={"ANTHROPIC_API_KEY": KEY, "RAWTRIO_PERMISSION_MODE": mode},
            flags={"base_url": place.base_url, "max_steps": 5},
        )
        async with open_remote_app(conn.fileno(), options, pid=info.pid) as app:
            conn.close()
            yield app


async def _until(session: RemoteSession, predicate: Any) -> ev.Event:
    with trio.fail_after(LIVENESS_S), session.subscribe() as sub:
        for e in await session.events_since(0):
            if predicate(e):
                return e
        async for e in sub:
            if predicate(e):
                return e
    raise AssertionError("the session closed first")


def test_the_two_refusals_of_32002_are_told_apart_by_their_reason() -> None:
    """-32002 is a turn running in the session or the session not live in the host;
    `data.reason` says which, and each is raised as its local class (the chat says "a
    turn is running" only when one is)."""
    busy = RpcError(-32002, "session s1 is running a turn", {"reason": "turn_running"})
    gone = RpcError(-32002, "session 's1' is not live in this host", {"reason": "not_live"})
    assert isinstance(remote_error(busy), TurnInProgress)
    closed = remote_error(gone)
    assert isinstance(closed, SessionClosed)
    assert str(closed) == "session 's1' is not live in this host"


async def test_the_session_operations_of_the_chat(place: Place, host: HostProcess) -> None:
    async with remote(place) as app:
        session = await app.start_session(Choice())
        assert app.agent == "default"
        assert session.policy.mode is PermissionMode.BYPASS
        assert session.cwd == place.iso.cwd
        assert session.model_name
        turn = await session.submit("say hello")
        with pytest.raises(TurnInProgress):  # the session runs a turn: as locally
            await session.submit("again")
        ended = await session.wait_turn(turn)
        assert ended.outcome is TurnOutcome.COMPLETED
        assert ended.final_text == "Hello from the fake model."
        assert session.running_turn is None
        stored = await session.events_since(0)
        assert stored[0].type == "user_message"
        assert [e.seq for e in stored] == list(range(1, len(stored) + 1))

        session.set_mode("plan")  # synchronous, as locally; mode_changed tells every one
        changed = await _until(session, lambda e: isinstance(e, ev.ModeChanged))
        assert isinstance(changed, ev.ModeChanged)
        assert changed.mode == "plan"
        assert session.policy.mode.value == "plan"

        with pytest.raises(UsageError, match="nope"):  # the local error class and message
            await session.set_model("nope")
        compacted = await session.compact(None)
        assert isinstance(compacted, ev.CompactionEnded)

        await session.refresh()  # as after every turn (for /cost)
        assert session.usage.context_tokens > 0

        records = await app.runtime.list_sessions(cwd=str(place.iso.cwd))
        assert session.id in [r.id for r in records]
        record = await app.runtime.get_session(session.id)
        assert record.message_count >= 2
        with pytest.raises(UnknownSession):
            await app.runtime.get_session("0" * 32)
        fork = await app.runtime.fork_session(session.id)
        forked = await app.runtime.open_session(fork, session.options)
        assert [e.type for e in await forked.events_since(0)][:1] == ["user_message"]
        await forked.close()
        assert forked.closed

        with pytest.raises(UsageError, match="another front end"):  # still open here
            await app.runtime.delete_session(session.id)
        await session.close()
        assert session.closed
        await app.runtime.delete_session(session.id)
        with pytest.raises(UnknownSession):
            await app.runtime.get_session(session.id)


async def test_an_approval_is_answered_by_the_attached_client(
    place: Place, host: HostProcess
) -> None:
    async with remote(place, mode="default") as app:
        session = await app.start_session(Choice())
        turn = await session.submit("use a tool")
        asked = await _until(session, lambda e: isinstance(e, ev.PermissionRequested))
        assert isinstance(asked, ev.PermissionRequested)
        assert asked.tool_id == "bash"
        assert dict(asked.arguments) == {"command": "echo tool-output"}  # full fidelity
        session.answer_permission(asked.request_id, ApprovalDecision.allow_once("tui"))
        with pytest.raises(UnknownApprovalRequest):  # answered: a second answer is refused
            session.answer_permission(asked.request_id, ApprovalDecision.deny(by="tui"))
        ended = await session.wait_turn(turn)
        assert ended.outcome is TurnOutcome.COMPLETED
        answered = await _until(session, lambda e: isinstance(e, ev.PermissionAnswered))
        assert isinstance(answered, ev.PermissionAnswered)
        assert answered.decision == "allow_once"
        finished = await _until(session, lambda e: isinstance(e, ev.ToolCallFinished))
        assert isinstance(finished, ev.ToolCallFinished)
        assert finished.status == "ok"


async def test_first_answer_wins_between_two_front_ends(place: Place, host: HostProcess) -> None:
    async with remote(place, mode="default") as app:
        session = await app.start_session(Choice())
        other = Client.connect(place.paths.socket)
        try:
            other.initialize()
            other.start(place, choice={"resume": session.id}, headless=False)
            turn = await session.submit("use a tool")
            asked = await _until(session, lambda e: isinstance(e, ev.PermissionRequested))
            assert isinstance(asked, ev.PermissionRequested)
            deny = {"kind": "deny", "message": "not now", "answered_by": "raw"}
            params = {"sessionId": session.id, "requestId": asked.request_id, "decision": deny}
            first = await trio.to_thread.run_sync(
                other.call, "_rawtrio/session/answer_permission", params
            )
            assert "error" not in first, first
            again = await trio.to_thread.run_sync(
                other.call, "_rawtrio/session/answer_permission", params
            )
            assert again["error"]["code"] == -32000  # answered already: the local error
            assert again["error"]["data"]["kind"] == "ApprovalAlreadyResolved"
            ended = await session.wait_turn(turn)
            assert ended.outcome is TurnOutcome.COMPLETED
            finished = await _until(session, lambda e: isinstance(e, ev.ToolCallFinished))
            assert isinstance(finished, ev.ToolCallFinished)
            assert finished.status == "denied"
            assert session.pending == {}
        finally:
            other.close()


async def test_a_turn_of_the_client_is_cancelled_by_another_front_end(
    place: Place, host: HostProcess
) -> None:
    async with remote(place) as app:
        session = await app.start_session(Choice())
        other = Client.connect(place.paths.socket)
        try:
            other.initialize()
            joined = other.start(place, choice={"resume": session.id}, headless=False)
            turn = await session.submit("sleep a while")
            await _until(session, lambda e: isinstance(e, ev.ToolCallStarted))
            assert joined["sessionId"] == session.id
            other.notify(
                "_rawtrio/session/cancel", {"sessionId": session.id, "reason": "received SIGINT"}
            )
            with trio.fail_after(LIVENESS_S):
                ended = await session.wait_turn(turn)
            assert ended.outcome is TurnOutcome.CANCELLED
            assert ended.reason == "received SIGINT"
            # And the other way round: the raw client's turn, cancelled from here.
            sub = await trio.to_thread.run_sync(
                other.result,
                "_rawtrio/session/submit",
                {"sessionId": session.id, "text": "sleep a while"},
            )
            await _until(
                session,
                lambda e: isinstance(e, ev.ToolCallStarted) and e.turn_id == sub["turnId"],
            )
            assert session.running_turn == sub["turnId"]
            assert session.cancel("cancelled by the user (Ctrl-C)")
            with trio.fail_after(LIVENESS_S):
                ended = await session.wait_turn(sub["turnId"])
            assert ended.outcome is TurnOutcome.CANCELLED
            assert ended.reason == "cancelled by the user (Ctrl-C)"
            assert not session.cancel("nothing runs")
        finally:
            other.close()
