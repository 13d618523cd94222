"""A grandchild's approval names the whole chain of `task` children that asks: a real
session (the fake model server, real SDK) whose child starts a child of its own that asks
before `bash`, its events fed to the chat as they come (no terminal)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import ProviderKind
from rawtrio.permissions.approval import ApprovalDecision
from rawtrio.permissions.rules import PermissionMode
from rawtrio.tui.app import ChatApp
from rawtrio.tui.host import ChatSetup
from tests.conftest import session_on


def task(description: str, prompt: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": description, "prompt": prompt}}


SCENARIO = {
    "rules": [
        {
            "match": "inner work",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo deep"}}]},
                {"text": "inner done"},
            ],
        },
        {
            "match": "outer work",
            "replies": [
                {"tool_calls": [task("the inner one", "inner work")]},
                {"text": "outer done"},
            ],
        },
        {
            "match": "go",
            "replies": [
                {"tool_calls": [task("the outer one", "outer work")]},
                {"text": "all done"},
            ],
        },
    ]
}


async def test_a_grandchilds_approval_names_both_children(
    wire: ProviderKind, tmp_path: Path
) -> None:
    asked: list[str] = []
    async with (
        session_on(SCENARIO, wire, tmp_path, permission_mode=PermissionMode.DEFAULT) as (
            session,
            _,
            _,
        ),
        trio.open_nursery() as nursery,
    ):
        setup = ChatSetup(runtime=None, options=None, agent="-", history_path=None)
        app = ChatApp(setup, nursery)
        app.session = session
        with session.subscribe() as sub:
            turn_id = await session.submit("go")
            async for event in sub:
                app.on_event(event, replay=False)
                if isinstance(event, ev.PermissionRequested) and event.tool_id == "bash":
                    assert app.prompt is not None
                    canvas = app.prompt.render((120,))
                    asked += [line.decode().strip() for line in canvas.text]
                    app.on_keys(["y"], [])  # allow once, through the chat
                elif isinstance(event, ev.PermissionRequested):
                    session.answer_permission(event.request_id, ApprovalDecision.allow_once())
                if isinstance(event, ev.TurnEnded) and event.session_id == session.id:
                    break
            ended = await session.wait_turn(turn_id)
        nursery.cancel_scope.cancel(reason="the test is over")
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert any(
        "asked by subagent (the outer one) \u203a subagent (the inner one)" in line
        for line in asked
    ), asked
