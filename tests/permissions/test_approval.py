"""The approval broker: answered, denied, first answer wins, cancelled."""

from __future__ import annotations

from collections.abc import Awaitable

import pytest
import trio
import trio.testing

from rawtrio.permissions import (
    AlwaysScope,
    ApprovalAlreadyResolved,
    ApprovalBroker,
    ApprovalDecision,
    ApprovalKind,
    ApprovalRequest,
    UnknownApprovalRequest,
)


async def ask(broker: ApprovalBroker, seen: list[ApprovalRequest]) -> ApprovalDecision:
    return await broker.request(
        call_id="c1",
        tool_id="bash",
        summary="Run `make`",
        arguments={"command": "make"},
        announce=seen.append,
    )


async def test_answer_resolves_the_waiting_request() -> None:
    broker = ApprovalBroker()
    seen: list[ApprovalRequest] = []
    result: list[ApprovalDecision] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _store(result, ask(broker, seen)))
        await trio.testing.wait_all_tasks_blocked()
        assert broker.pending() == tuple(seen)
        assert seen[0].arguments["command"] == "make"
        broker.answer(seen[0].request_id, ApprovalDecision.allow_always(AlwaysScope.PROJECT))
    assert result[0].kind is ApprovalKind.ALLOW_ALWAYS
    assert result[0].scope is AlwaysScope.PROJECT
    assert broker.pending() == ()


async def test_denial_carries_the_message_for_the_model() -> None:
    broker = ApprovalBroker()
    seen: list[ApprovalRequest] = []
    result: list[ApprovalDecision] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _store(result, ask(broker, seen)))
        await trio.testing.wait_all_tasks_blocked()
        broker.answer(seen[0].request_id, ApprovalDecision.deny("use make check", by="tui"))
    assert (result[0].kind, result[0].message, result[0].allowed) == (
        ApprovalKind.DENY,
        "use make check",
        False,
    )


async def test_first_answer_wins_and_later_answers_are_rejected() -> None:
    broker = ApprovalBroker()
    seen: list[ApprovalRequest] = []
    result: list[ApprovalDecision] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _store(result, ask(broker, seen)))
        await trio.testing.wait_all_tasks_blocked()
        rid = seen[0].request_id
        broker.answer(rid, ApprovalDecision.allow_once(by="tui"))
        with pytest.raises(ApprovalAlreadyResolved) as info:
            broker.answer(rid, ApprovalDecision.deny(by="acp"))
    assert info.value.resolution.answered_by == "tui"
    assert result[0].kind is ApprovalKind.ALLOW_ONCE


async def test_cancelling_the_wait_resolves_the_request_as_cancelled() -> None:
    broker = ApprovalBroker()
    seen: list[ApprovalRequest] = []
    with trio.move_on_after(5) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, broker, seen)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel(reason="turn cancelled")
    assert not scope.cancelled_caught
    assert broker.pending() == ()
    with pytest.raises(ApprovalAlreadyResolved, match="was cancelled") as info:
        broker.answer(seen[0].request_id, ApprovalDecision.allow_once())
    assert info.value.resolution.kind is ApprovalKind.CANCELLED


async def test_unknown_request_ids_are_rejected() -> None:
    with pytest.raises(UnknownApprovalRequest):
        ApprovalBroker().answer("nope", ApprovalDecision.allow_once())


async def test_cancelled_is_not_an_answer_a_front_end_can_give() -> None:
    broker = ApprovalBroker()
    seen: list[ApprovalRequest] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, broker, seen)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(ValueError, match="cancel the turn"):
            broker.answer(seen[0].request_id, ApprovalDecision(ApprovalKind.CANCELLED))
        broker.answer(seen[0].request_id, ApprovalDecision.allow_once())


async def test_a_failing_announce_leaves_no_pending_request() -> None:
    broker = ApprovalBroker()

    def boom(_: ApprovalRequest) -> None:
        raise RuntimeError("renderer broke")

    with pytest.raises(RuntimeError):
        await broker.request(call_id="c", tool_id="bash", summary="s", announce=boom)
    assert broker.pending() == ()


async def _store(into: list[ApprovalDecision], waiting: Awaitable[ApprovalDecision]) -> None:
    into.append(await waiting)
