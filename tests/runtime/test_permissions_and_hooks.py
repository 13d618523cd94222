"""Approval, rules, modes and hooks inside real turns (real SDKs, fake model server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import DeniedBy, ToolStatus, TurnOutcome
from rawtrio.hooks import HookEvent, HookSpec
from rawtrio.messages import Message, ProviderKind, ToolResult, UserMessage, check_pairing
from rawtrio.permissions.approval import ApprovalAlreadyResolved, ApprovalDecision
from rawtrio.permissions.rules import PermissionMode, make_rule
from rawtrio.runtime.session import Session
from rawtrio.runtime.subscribers import Subscription
from tests.conftest import session_on

WIRE: ProviderKind = "anthropic"


def touch_scenario(marker: Path) -> dict[str, object]:
    call = {"name": "bash", "arguments": {"command": f"touch {marker}; echo made"}}
    return {
        "rules": [
            {"match": "after", "replies": [{"text": "ok"}]},
            {"match": "touch", "replies": [{"tool_calls": [call]}, {"text": "finished"}]},
        ]
    }


def results(context: list[Message]) -> list[ToolResult]:
    return [m for m in context if isinstance(m, ToolResult)]


async def answer_first_request(session: Session, decision: ApprovalDecision) -> ev.Event:
    with session.subscribe() as sub:
        async for event in sub:
            if isinstance(event, ev.PermissionRequested):
                session.answer_permission(event.request_id, decision)
                return event
    raise AssertionError("no permission request")


async def test_ask_allowed_once_runs_the_call(tmp_path: Path) -> None:
    marker = tmp_path / "made"
    async with session_on(
        touch_scenario(marker), WIRE, tmp_path, permission_mode=PermissionMode.DEFAULT
    ) as (session, _server, _):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer_first_request, session, ApprovalDecision.allow_once("test"))
            ended = await session.run_turn("touch it")
        assert ended.outcome is TurnOutcome.COMPLETED
        assert marker.exists()
        assert [r.status for r in results(session.context)] == [ToolStatus.OK]


async def test_ask_denied_with_a_message_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "made"
    async with session_on(
        touch_scenario(marker), WIRE, tmp_path, permission_mode=PermissionMode.DEFAULT
    ) as (session, _server, _):
        async with trio.open_nursery() as nursery:
            decision = ApprovalDecision.deny("not in my home directory")
            nursery.start_soon(answer_first_request, session, decision)
            ended = await session.run_turn("touch it")
        assert ended.outcome is TurnOutcome.COMPLETED
        assert not marker.exists()
        (r,) = results(session.context)
        assert r.status is ToolStatus.DENIED
        assert r.denied_by is DeniedBy.USER
        assert "not in my home directory" in r.content


async def test_cancel_while_waiting_for_approval_answers_cancelled(tmp_path: Path) -> None:
    marker = tmp_path / "made"
    async with session_on(
        touch_scenario(marker), WIRE, tmp_path, permission_mode=PermissionMode.DEFAULT
    ) as (session, _server, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("touch it")
            async for event in sub:
                if isinstance(event, ev.PermissionRequested):
                    request_id = event.request_id
                    session.cancel("test cancel")
                    break
            ended = await session.wait_turn(turn_id)
            rest = [e async for e in _until_end(sub)]
        assert ended.outcome is TurnOutcome.CANCELLED
        answers = [e for e in rest if isinstance(e, ev.PermissionAnswered)]
        assert [a.decision for a in answers] == ["cancelled"]
        (r,) = results(session.context)
        assert r.status is ToolStatus.CANCELLED
        assert r.started is False
        assert not marker.exists()
        assert session.approvals.pending() == ()
        with pytest.raises(ApprovalAlreadyResolved, match="cancelled"):
            session.answer_permission(request_id, ApprovalDecision.allow_once())
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED
        assert check_pairing(session.context) == []


async def test_unconditional_deny_hides_the_tool_and_headless_ask_is_denied(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "made"
    rules = (make_rule("write_file", "deny"),)
    async with session_on(
        touch_scenario(marker),
        WIRE,
        tmp_path,
        permission_rules=rules,
        permission_mode=PermissionMode.DEFAULT,
        headless=True,
    ) as (session, server, _):
        ended = await session.run_turn("touch it")
        assert ended.outcome is TurnOutcome.COMPLETED
        (r,) = results(session.context)
        assert r.status is ToolStatus.DENIED
        assert r.denied_by is DeniedBy.POLICY
        assert "--yes" in r.content
        sent = [t["name"] for t in server.requests[0].body["tools"]]
        assert "write_file" not in sent
        assert "bash" in sent


async def test_plan_mode_refuses_changes_and_keeps_the_tool_list(tmp_path: Path) -> None:
    marker = tmp_path / "made"
    async with session_on(touch_scenario(marker), WIRE, tmp_path) as (session, server, _):
        session.set_mode(PermissionMode.PLAN)
        await session.run_turn("touch it")
        (r,) = results(session.context)
        assert r.denied_by is DeniedBy.MODE
        session.set_mode(PermissionMode.BYPASS)
        await session.run_turn("after")
        first, *_, last = server.requests
        assert first.body["tools"] == last.body["tools"]


async def test_hooks_block_deny_and_add_context(tmp_path: Path) -> None:
    marker = tmp_path / "made"
    hooks = (
        HookSpec(
            HookEvent.PRE_TOOL_USE, "echo 'no touching' >&2; exit 2", matcher="bash", shell=True
        ),
        HookSpec(HookEvent.USER_PROMPT_SUBMIT, "echo 'remember: be brief'", shell=True),
    )
    async with session_on(touch_scenario(marker), WIRE, tmp_path, hooks=hooks) as (
        session,
        _server,
        _,
    ):
        with session.subscribe() as sub:
            ended = await session.run_turn("touch it")
            events = [e async for e in _until_end(sub)]
    assert ended.outcome is TurnOutcome.COMPLETED
    assert not marker.exists()
    (r,) = results(session.context)
    assert r.denied_by is DeniedBy.HOOK
    assert "no touching" in r.content
    first = session.context[0]
    assert isinstance(first, UserMessage)
    assert "remember: be brief" in first.text
    receipts = [e for e in events if isinstance(e, ev.HookRan)]
    assert {e.event for e in receipts} >= {"PreToolUse", "UserPromptSubmit"}


async def test_a_prompt_blocked_by_a_hook_commits_nothing(tmp_path: Path) -> None:
    hooks = (HookSpec(HookEvent.USER_PROMPT_SUBMIT, "echo 'not today' >&2; exit 2", shell=True),)
    async with session_on(touch_scenario(tmp_path / "m"), WIRE, tmp_path, hooks=hooks) as (
        session,
        server,
        _,
    ):
        ended = await session.run_turn("touch it")
    assert ended.outcome is TurnOutcome.ERROR
    assert "not today" in ended.reason
    assert session.context == []
    assert server.requests == []


async def _until_end(sub: Subscription) -> AsyncIterator[ev.Event]:
    async for event in sub:
        yield event
        if isinstance(event, ev.TurnEnded):
            return


async def test_a_cancel_during_after_hooks_keeps_how_the_command_ended(tmp_path: Path) -> None:
    """Found by the stress suite's hook scenario: a call whose command finished but whose
    PostToolUse hook was cancelled must still say how the command ended (I5)."""
    marker = tmp_path / "made"
    hook_started = tmp_path / "hook-started"
    hooks = (
        HookSpec(
            HookEvent.POST_TOOL_USE,
            f"cat >/dev/null; touch {hook_started}; sleep 30",
            matcher="bash",
            shell=True,
        ),
    )
    async with session_on(touch_scenario(marker), WIRE, tmp_path, hooks=hooks) as (
        session,
        _server,
        _,
    ):
        turn_id = await session.submit("touch it")
        while not hook_started.exists():  # noqa: ASYNC110 (a file: no event exists)
            await trio.sleep(0.01)
        session.cancel("test cancel")
        ended = await session.wait_turn(turn_id)
        assert ended.outcome is TurnOutcome.CANCELLED
        (r,) = results(session.context)
        assert r.status is ToolStatus.CANCELLED
        assert r.started is True
        details = dict(r.details)
        assert details["ended_by"] == "exit"
        assert details["exit_code"] == 0
        assert "elapsed_s" in details
        assert "made" in r.content
        assert "after-hooks were cancelled" in r.content
