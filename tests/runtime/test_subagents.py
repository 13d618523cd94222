"""`task` children (docs/contracts.md, The `task` tool): real SDKs against the fake model
server, real subprocesses, the child a session of its own inside the parent's call."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import trio
import trio.testing

from rawtrio import events as ev
from rawtrio.contracts import CLEANUP_DEADLINE_S, ToolStatus, TurnOutcome
from rawtrio.hooks import HookEvent, HookSpec
from rawtrio.messages import ProviderKind, ToolResult, check_pairing
from rawtrio.permissions.approval import ApprovalDecision
from rawtrio.permissions.rules import PermissionMode
from rawtrio.store.memory import MemoryStore
from tests.conftest import session_on


def task(description: str, prompt: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": description, "prompt": prompt}}


def scenario(
    *children: tuple[str, list[dict[str, Any]]], parent_calls: Any = None
) -> dict[str, Any]:
    """The parent asks for `parent_calls` on "go"; each child answers its prompt's rule."""
    calls = parent_calls if parent_calls is not None else [task("look around", "child one")]
    rules = [{"match": match, "replies": replies} for match, replies in children]
    return {
        "rules": [
            *rules,
            {"match": "after", "replies": [{"text": "fine"}]},
            {
                "match": "go",
                "replies": [{"text": "Delegating.", "tool_calls": calls}, {"text": "Parent done."}],
            },
        ]
    }


async def _until_ended(sub: Any) -> list[ev.Event]:
    out: list[ev.Event] = []
    async for event in sub:
        out.append(event)
        if isinstance(event, ev.TurnEnded) and event.session_id == out[0].session_id:
            break
    return out


async def test_child_answers_and_its_text_is_the_result(wire: ProviderKind, tmp_path: Path) -> None:
    sc = scenario(("child one", [{"text": "The child found three files."}]))
    store = MemoryStore()
    async with session_on(sc, wire, tmp_path, store=store) as (session, _, runtime):
        with session.subscribe() as sub:
            ended = await session.run_turn("go")
            events = await _until_ended(sub)
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in results] == [ToolStatus.OK]
        assert results[0].content == "The child found three files."
        child_id = results[0].details["child_session_id"]
        assert check_pairing(session.context) == []
        # Linked to its parent, listed under it, never among the top-level sessions.
        children = await store.list_children(session.id)
        assert [c.id for c in children] == [child_id]
        assert children[0].parent_id == session.id
        assert children[0].parent_call_id == results[0].call_id
        assert children[0].depth == 1
        assert child_id not in {r.id for r in await runtime.list_sessions()}
        assert child_id not in runtime.live_sessions
        # Its own transcript: the prompt, its answer, one outcome.
        child_events = await store.events_since(child_id, 0)
        assert [e.text for e in child_events if isinstance(e, ev.UserMessageCommitted)] == [
            "child one"
        ]
        child_ends = [e for e in child_events if isinstance(e, ev.TurnEnded)]
        assert [e.outcome for e in child_ends] == [TurnOutcome.COMPLETED]
        # The parent's subscribers saw the child start, its events, its end, in that order.
        types = [e.type for e in events]
        assert types.index("tool_call_started") < types.index("subagent_started")
        assert types.index("subagent_started") < types.index("subagent_event")
        assert types.index("subagent_ended") < types.index("tool_call_finished")
        wrapped = [e for e in events if isinstance(e, ev.SubagentEvent)]
        assert {e.child_session_id for e in wrapped} == {child_id}
        # The child's usage is added to the parent's totals.
        own = sum(e.output_tokens for e in events if isinstance(e, ev.Usage))
        child_out = sum(e.output_tokens for e in child_events if isinstance(e, ev.Usage))
        assert own > 0
        assert child_out > 0
        assert session.usage.output_tokens == own + child_out
        assert results[0].details["output_tokens"] == child_out
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason


async def test_children_of_one_reply_run_concurrently(wire: ProviderKind, tmp_path: Path) -> None:
    # Each child waits (polling a file) for the other's marker: one after another, the
    # first would never finish.
    a, b = tmp_path / "a", tmp_path / "b"
    wait_for = "for i in $(seq 1 400); do [ -e {0} ] && exit 0; sleep 0.05; done; exit 1"
    sc = scenario(
        (
            "child A",
            [
                {
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {"command": f"touch {a}; {wait_for.format(b)}"},
                        }
                    ]
                },
                {"text": "A done"},
            ],
        ),
        (
            "child B",
            [
                {
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {"command": f"touch {b}; {wait_for.format(a)}"},
                        }
                    ]
                },
                {"text": "B done"},
            ],
        ),
        parent_calls=[task("first", "child A"), task("second", "child B")],
    )
    async with session_on(sc, wire, tmp_path) as (session, _, _):
        ended = await session.run_turn("go")
        results = [m for m in session.context if isinstance(m, ToolResult)]
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert [r.content for r in results] == ["A done", "B done"]


async def test_cancel_while_child_runs_a_process(wire: ProviderKind, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    sc = scenario(
        (
            "child one",
            [
                {
                    "text": "Running.",
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {
                                "command": f"echo $$ > {pidfile}; echo started; exec sleep 60"
                            },
                        }
                    ],
                },
                {"text": "never"},
            ],
        )
    )
    store = MemoryStore()
    async with session_on(sc, wire, tmp_path, store=store) as (session, _, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("go")
            async for event in sub:
                if (
                    isinstance(event, ev.SubagentEvent)
                    and event.event["type"] == "tool_output_delta"
                ):
                    session.cancel("test cancel")
                    break
            ended = await session.wait_turn(turn_id)
        assert ended.outcome is TurnOutcome.CANCELLED
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [(r.status, r.started) for r in results] == [(ToolStatus.CANCELLED, True)]
        assert "subagent 'look around' was cancelled" in results[0].content
        assert "bash: cancelled" in results[0].content
        assert check_pairing(session.context) == []
        # The child recorded a result for its cut call and one outcome, with the reason.
        (child,) = await store.list_children(session.id)
        child_context = await store.load_context(child.id)
        assert check_pairing(child_context) == []
        child_results = [m for m in child_context if isinstance(m, ToolResult)]
        assert [(r.status, r.started) for r in child_results] == [(ToolStatus.CANCELLED, True)]
        ends = [e for e in await store.events_since(child.id, 0) if isinstance(e, ev.TurnEnded)]
        assert [(e.outcome, e.reason) for e in ends] == [(TurnOutcome.CANCELLED, "test cancel")]
        # Its process is gone.
        pid = int(pidfile.read_text())
        assert not _alive(pid)
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason


async def test_cancelled_children_report_how_their_processes_were_stopped(
    wire: ProviderKind, tmp_path: Path
) -> None:
    # Two children each run a command that dies on SIGTERM; cancelling the parent closes
    # each child's session while its call is being stopped. Each cut call says it was
    # stopped with SIGTERM and died of it (the session's sweep once reaped the leader
    # first: "it had already finished (exit code 0)").
    bash = {"name": "bash", "arguments": {"command": "echo started; exec sleep 60"}}
    calls = [task("one", "child one"), task("two", "child two")]
    sc = scenario(
        ("child one", [{"tool_calls": [bash]}]),
        ("child two", [{"tool_calls": [bash]}]),
        parent_calls=calls,
    )
    for _ in range(3):
        store = MemoryStore()
        async with session_on(sc, wire, tmp_path, store=store) as (session, _, _):
            with session.subscribe() as sub:
                turn_id = await session.submit("go")
                running: set[str] = set()
                async for event in sub:
                    if (
                        isinstance(event, ev.SubagentEvent)
                        and event.event["type"] == "tool_output_delta"
                    ):
                        running.add(event.child_session_id)
                        if len(running) == 2:
                            session.cancel("test cancel")
                            break
                ended = await session.wait_turn(turn_id)
            assert ended.outcome is TurnOutcome.CANCELLED
            children = await store.list_children(session.id)
            assert len(children) == 2
            for child in children:
                context = await store.load_context(child.id)
                (cut,) = [m for m in context if isinstance(m, ToolResult)]
                assert cut.status is ToolStatus.CANCELLED
                assert "stopped with SIGTERM; killed by signal SIGTERM (15)" in cut.content
                assert (cut.details["signal"], cut.details["exit_code"]) == (15, None)


class ChildBeginsSlowly(MemoryStore):
    """Holds a child's `begin_turn` (shielded) until released, then lets a pending cancel
    land in it: the child's `submit` fails while its session is already closing."""

    def __init__(self) -> None:
        super().__init__()
        self.parent_id = ""
        self.entered = trio.Event()
        self.release = trio.Event()

    async def begin_turn(
        self, session_id: str, turn_id: str, client_request_id: str | None
    ) -> None:
        if session_id != self.parent_id:
            self.entered.set()
            with trio.CancelScope(shield=True):
                await self.release.wait()
            await trio.lowlevel.checkpoint()
        await super().begin_turn(session_id, turn_id, client_request_id)


async def test_a_cancel_while_the_child_submits_its_turn_ends_the_parent_at_once(
    wire: ProviderKind, tmp_path: Path
) -> None:
    # The parent's cancel reaches the child's session (closing: it waits for its running
    # turn before sweeping) while the child's `submit` is still storing the turn's start;
    # that submit then fails. The turn never ran, and nothing may wait for it: the parent
    # once waited the whole cleanup deadline (10 s) for the child to close.
    sc = scenario(("child one", [{"text": "never asked"}]))
    store = ChildBeginsSlowly()
    async with session_on(sc, wire, tmp_path, store=store) as (session, _, _):
        store.parent_id = session.id
        turn_id = await session.submit("go")
        await store.entered.wait()
        session.cancel("test cancel")
        await trio.testing.wait_all_tasks_blocked()
        store.release.set()
        with trio.fail_after(CLEANUP_DEADLINE_S / 2):  # liveness: no cleanup deadline hit
            ended = await session.wait_turn(turn_id)
        assert ended.outcome is TurnOutcome.CANCELLED
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in results] == [ToolStatus.CANCELLED]
        assert "subagent 'look around' was cancelled" in results[0].content
        assert check_pairing(session.context) == []


async def test_cancel_while_child_streams(wire: ProviderKind, tmp_path: Path) -> None:
    sc = scenario(("child one", [{"text": "words " * 40, "chunk": 4, "stall_after": 5}]))
    store = MemoryStore()
    async with session_on(sc, wire, tmp_path, store=store) as (session, _, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("go")
            async for event in sub:
                if isinstance(event, ev.SubagentEvent) and event.event["type"] == "text_delta":
                    session.cancel("test cancel")
                    break
            ended = await session.wait_turn(turn_id)
        assert ended.outcome is TurnOutcome.CANCELLED
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in results] == [ToolStatus.CANCELLED]
        assert "Its last text:\nword" in results[0].content  # what the child had said
        (child,) = await store.list_children(session.id)
        child_events = await store.events_since(child.id, 0)
        assert [e.type for e in child_events].count("stream_interrupted") == 1
        assert [e.outcome for e in child_events if isinstance(e, ev.TurnEnded)] == [
            TurnOutcome.CANCELLED
        ]


async def test_child_approval_reaches_the_parent_and_rules_narrow(
    wire: ProviderKind, tmp_path: Path
) -> None:
    """The parent asks before bash; the child's call asks the parent's front ends (labelled),
    and a denial there is the child's result."""
    sc = scenario(
        (
            "child one",
            [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
                {"text": "bash was refused"},
            ],
        )
    )
    async with session_on(
        sc,
        wire,
        tmp_path,
        permission_mode=PermissionMode.DEFAULT,
    ) as (session, _, _):
        with session.subscribe() as sub:
            turn_id = await session.submit("go")
            async for event in sub:
                if isinstance(event, ev.PermissionRequested) and event.tool_id == "bash":
                    assert event.summary.startswith("[subagent look around]")
                    session.answer_permission(event.request_id, ApprovalDecision.deny("no"))
                elif isinstance(event, ev.PermissionRequested):
                    session.answer_permission(event.request_id, ApprovalDecision.allow_once())
                if isinstance(event, ev.TurnEnded) and event.session_id == session.id:
                    break
            ended = await session.wait_turn(turn_id)
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.content for r in results] == ["bash was refused"]


async def test_depth_is_bounded(wire: ProviderKind, tmp_path: Path) -> None:
    sc = scenario(("child one", [{"text": "x"}]))
    async with session_on(sc, wire, tmp_path, max_subagent_depth=0) as (session, _, _):
        ended = await session.run_turn("go")
        assert "task" not in {s.name for s in session.tool_specs}
        results = [m for m in session.context if isinstance(m, ToolResult)]
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert results[0].status is ToolStatus.ERROR
    assert "max_subagent_depth" in results[0].content


async def test_a_failing_child_is_an_error_result(wire: ProviderKind, tmp_path: Path) -> None:
    sc = scenario(("child one", [{"error": {"status": 400}}]))
    async with session_on(sc, wire, tmp_path) as (session, _, _):
        ended = await session.run_turn("go")
        results = [m for m in session.context if isinstance(m, ToolResult)]
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert results[0].status is ToolStatus.ERROR
    assert "ended with error" in results[0].content


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_hooks_run_for_the_child_with_its_parent(wire: ProviderKind, tmp_path: Path) -> None:
    log = tmp_path / "hooks.jsonl"
    record = f"cat >> {log}; echo >> {log}"
    hooks = tuple(
        HookSpec(event, record, shell=True)
        for event in (HookEvent.SUBAGENT_START, HookEvent.SUBAGENT_STOP, HookEvent.PRE_TOOL_USE)
    )
    sc = scenario(
        (
            "child one",
            [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
                {"text": "ok"},
            ],
        )
    )
    async with session_on(sc, wire, tmp_path, hooks=hooks) as (session, _, _):
        ended = await session.run_turn("go")
        results = [m for m in session.context if isinstance(m, ToolResult)]
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    child_id = results[0].details["child_session_id"]
    seen = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    by_event = [(s["hook_event_name"], s.get("tool_name")) for s in seen]
    assert by_event == [
        ("PreToolUse", "task"),
        ("SubagentStart", None),
        ("PreToolUse", "bash"),
        ("SubagentStop", None),
    ]
    start, child_call, stop = seen[1], seen[2], seen[3]
    assert start["session_id"] == session.id
    assert start["child_session_id"] == child_id
    assert start["description"] == "look around"
    assert child_call["session_id"] == child_id
    assert child_call["parent_session_id"] == session.id
    assert stop["outcome"] == "completed"
    assert "parent_session_id" not in seen[0]


async def test_the_transcript_view_nests_the_child_under_the_task_call(
    wire: ProviderKind, tmp_path: Path
) -> None:
    from rawtrio.runtime.view import ToolCallView, TranscriptView

    sc = scenario(
        (
            "child one",
            [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
                {"text": "child says hi"},
            ],
        )
    )
    async with session_on(sc, wire, tmp_path) as (session, _, _):
        await session.run_turn("go")
        history = await session.events_since(0)
    view = TranscriptView.replay(history)
    tools = [i for i in view.items() if isinstance(i, ToolCallView)]
    assert [t.tool_id for t in tools] == ["task"]  # the child's calls are not the parent's
    assert tools[0].output.splitlines() == [
        "→ bash command=echo hi",
        "← bash ok",
        "child says hi",
        "[subagent completed: end_turn]",
    ]
    # ACP: the child's progress is `tool_call_update` content on the parent's call.
    from rawtrio.acp.updates import UpdateMapper

    mapper = UpdateMapper(tmp_path)
    updates = [u for e in history for u in mapper.updates(e)]
    task_id = tools[0].call_id
    texts = [
        c["content"]["text"]
        for u in updates
        if u.get("toolCallId") == task_id and u["sessionUpdate"] == "tool_call_update"
        for c in u.get("content", [])
        if c.get("type") == "content"
    ]
    assert any("→ bash command=echo hi" in t for t in texts)
    assert {u.get("toolCallId") for u in updates if "toolCallId" in u} == {task_id}


async def test_children_at_once_are_bounded_per_session(wire: ProviderKind, tmp_path: Path) -> None:
    # Each child marks that it runs, waits a little, and notes whether the other ran
    # meanwhile: with one slot, the second starts only after the first ended.
    def child(me: str, other: str) -> list[dict[str, Any]]:
        mine, theirs, overlap = tmp_path / me, tmp_path / other, tmp_path / "overlap"
        command = f"touch {mine}; sleep 0.3; [ -e {theirs} ] && touch {overlap}; rm {mine}"
        return [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": f"{me} done"},
        ]

    sc = scenario(
        ("child A", child("a", "b")),
        ("child B", child("b", "a")),
        parent_calls=[task("first", "child A"), task("second", "child B")],
    )
    async with session_on(sc, wire, tmp_path, max_concurrent_subagents=1) as (session, _, _):
        ended = await session.run_turn("go")
        results = [m for m in session.context if isinstance(m, ToolResult)]
    assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
    assert [r.content for r in results] == ["a done", "b done"]
    assert not (tmp_path / "overlap").exists()
