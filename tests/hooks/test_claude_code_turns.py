"""Claude Code hooks inside real turns (real SDK, fake model server): `continue: false`
ends the turn after the call, `permissionDecision` allow/ask reach the permission step."""

from __future__ import annotations

from pathlib import Path

from rawtrio.contracts import DeniedBy, ToolStatus, TurnOutcome
from rawtrio.hooks import HookEvent, HookSpec
from rawtrio.messages import ToolResult, check_pairing
from rawtrio.permissions.rules import PermissionMode
from tests.conftest import session_on
from tests.hooks.conftest import py

HALT = "import json; print(json.dumps({'continue': False, 'stopReason': 'tests are red'}))"


def decision(value: str) -> str:
    return (
        "import json; print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        f"'permissionDecision': {value!r}}}}}))"
    )


def two_calls(first: str, second: str) -> dict[str, object]:
    calls = [
        {"name": "bash", "arguments": {"command": first}},
        {"name": "bash", "arguments": {"command": second}},
    ]
    return {
        "rules": [
            {"match": "again", "replies": [{"text": "ok"}]},
            {"match": "go", "replies": [{"tool_calls": calls}, {"text": "finished"}]},
        ]
    }


def results(session: object) -> list[ToolResult]:
    return [m for m in session.context if isinstance(m, ToolResult)]  # type: ignore[attr-defined]


async def test_continue_false_after_a_call_ends_the_turn_and_skips_the_rest(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "second-ran"
    hooks = (HookSpec(HookEvent.POST_TOOL_USE, py(HALT), matcher="Bash", dialect="claude-code"),)
    async with session_on(
        two_calls("echo first", f"touch {marker}"), "anthropic", tmp_path, hooks=hooks
    ) as (session, server, _):
        ended = await session.run_turn("go")
        assert (ended.outcome, ended.reason) == (
            TurnOutcome.COMPLETED,
            "a hook ended the turn: tests are red",
        )
        first, second = results(session)
        assert (first.status, second.status) == (ToolStatus.OK, ToolStatus.NOT_RUN)
        assert second.content == "not run: a hook ended the turn (tests are red)"
        assert not marker.exists()
        assert len(server.requests) == 1
        assert check_pairing(session.context) == []
        again = await session.run_turn("again")
        assert again.outcome is TurnOutcome.COMPLETED


async def test_an_own_hooks_continue_false_only_blocks(tmp_path: Path) -> None:
    hooks = (HookSpec(HookEvent.POST_TOOL_USE, py(HALT), matcher="bash"),)
    async with session_on(
        two_calls("echo first", "echo second"), "anthropic", tmp_path, hooks=hooks
    ) as (session, _, _):
        ended = await session.run_turn("go")
        assert ended.outcome is TurnOutcome.COMPLETED
        assert [r.status for r in results(session)] == [ToolStatus.OK, ToolStatus.OK]
        assert "[hook feedback] tests are red" in results(session)[0].content


async def test_a_headless_turn_runs_what_a_hook_allows_and_refuses_what_it_asks_about(
    tmp_path: Path,
) -> None:
    hooks = (
        HookSpec(HookEvent.PRE_TOOL_USE, py(decision("allow")), "Bash", dialect="claude-code"),
    )
    async with session_on(
        two_calls("echo one", "echo two"),
        "anthropic",
        tmp_path,
        hooks=hooks,
        permission_mode=PermissionMode.DEFAULT,
        headless=True,
    ) as (session, _, _):
        await session.run_turn("go")
        assert [r.status for r in results(session)] == [ToolStatus.OK, ToolStatus.OK]
    asks = (HookSpec(HookEvent.PRE_TOOL_USE, py(decision("ask")), "Bash", dialect="claude-code"),)
    async with session_on(
        two_calls("echo one", "echo two"),
        "anthropic",
        tmp_path,
        hooks=asks,
        permission_mode=PermissionMode.BYPASS,
        headless=True,
    ) as (session, _, _):
        await session.run_turn("go")
        refused = results(session)
        assert [(r.status, r.denied_by) for r in refused] == [
            (ToolStatus.DENIED, DeniedBy.POLICY)
        ] * 2
