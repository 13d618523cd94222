"""The transcript view: the fold from events to frozen view states every front end renders."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from rawtrio import events as ev
from rawtrio.contracts import DeniedBy, ToolStatus, TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.permissions.approval import ApprovalDecision
from rawtrio.permissions.rules import PermissionMode
from rawtrio.runtime.view import (
    ApprovalView,
    Change,
    ChangeKind,
    CompactionView,
    DiffView,
    MessageView,
    NoticeView,
    PlanEntry,
    PlanView,
    ThinkingView,
    ToolCallView,
    ToolPhase,
    TranscriptView,
    TurnEndView,
    UserView,
)
from rawtrio.store.sqlite import SqliteStore
from tests.conftest import session_on

S = "s"
T = "t1"


class Events:
    """Events of one session with increasing seq and controllable timestamps."""

    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, cls: type[ev.Event], ts: float = 100.0, **fields: Any) -> Any:
        self.seq += 1
        fields.setdefault("turn_id", T)
        return cls(session_id=S, seq=self.seq, ts=ts, **fields)


@pytest.fixture
def e() -> Events:
    return Events()


def only(changes: tuple[Change, ...]) -> Change:
    assert len(changes) == 1, changes
    return changes[0]


def tool_of(change: Change) -> ToolCallView:
    assert isinstance(change.item, ToolCallView)
    return change.item


# --- messages and thinking -----------------------------------------------------------------


def test_text_deltas_grow_one_message_and_carry_what_they_appended(e: Events) -> None:
    view = TranscriptView()
    first = only(view.apply(e(ev.TextDelta, step=1, text="Hel")))
    second = only(view.apply(e(ev.TextDelta, step=1, text="lo")))
    assert first.kind is ChangeKind.ADDED
    assert first.appended == "Hel"
    assert second.kind is ChangeKind.UPDATED
    assert second.appended == "lo"
    assert second.before == first.item
    assert second.item == MessageView(first.item.key, T, 1, "Hello")
    assert not second.item.final


def test_the_committed_message_is_final_and_a_new_step_is_a_new_message(e: Events) -> None:
    view = TranscriptView()
    view.apply(e(ev.TextDelta, step=1, text="One"))
    done = only(view.apply(e(ev.AssistantMessageCommitted, step=1, text="One")))
    assert isinstance(done.item, MessageView)
    assert done.item.final
    assert done.item.committed
    assert done.appended == ""
    added = only(view.apply(e(ev.TextDelta, step=2, text="Two")))
    assert added.kind is ChangeKind.ADDED
    assert [i.text for i in view.items() if isinstance(i, MessageView)] == ["One", "Two"]


def test_a_message_of_tool_calls_only_shows_no_message(e: Events) -> None:
    view = TranscriptView()
    changes = view.apply(
        e(ev.AssistantMessageCommitted, step=1, text="", tool_calls=(("c1", "bash", None),))
    )
    assert [type(c.item) for c in changes] == [ToolCallView]


def test_thinking_is_its_own_item_beside_the_reply(e: Events) -> None:
    view = TranscriptView()
    view.apply(e(ev.ThinkingDelta, step=1, text="hmm, "))
    change = only(view.apply(e(ev.ThinkingDelta, step=1, text="yes")))
    view.apply(e(ev.TextDelta, step=1, text="Answer"))
    assert isinstance(change.item, ThinkingView)
    assert change.item.text == "hmm, yes"
    assert change.appended == "yes"
    assert [type(i) for i in view.items()] == [ThinkingView, MessageView]


def test_an_interrupted_stream_marks_the_reply_cut_and_drops_its_announced_calls(
    e: Events,
) -> None:
    view = TranscriptView()
    view.apply(e(ev.TextDelta, step=1, text="Let me"))
    view.apply(e(ev.ToolCallAnnounced, step=1, call_id="c1", name="bash"))
    changes = view.apply(e(ev.StreamInterrupted, step=1, partial_text="Let me", reason="SIGINT"))
    message, removed = changes
    assert isinstance(message.item, MessageView)
    assert message.item.final
    assert message.item.cut == "SIGINT"
    assert message.item.text == "Let me"
    assert removed.kind is ChangeKind.REMOVED
    assert tool_of(removed).dropped == "SIGINT"
    assert tool_of(removed).phase is ToolPhase.ANNOUNCED
    assert view.tool("c1") is None
    assert view.open_tools() == []
    assert [type(i) for i in view.items()] == [MessageView]


def test_a_stream_cut_before_any_text_is_an_empty_cut_reply(e: Events) -> None:
    view = TranscriptView()
    change = only(view.apply(e(ev.StreamInterrupted, step=1, partial_text="", reason="timeout")))
    assert change.item == MessageView(change.item.key, T, 1, "", True, "timeout")


def test_the_turns_end_settles_open_replies_of_that_turn_only(e: Events) -> None:
    view = TranscriptView()
    view.apply(e(ev.TextDelta, turn_id="t0", step=1, text="other"))
    view.apply(e(ev.TextDelta, step=1, text="mine"))
    changes = view.apply(
        e(ev.TurnEnded, outcome=TurnOutcome.ERROR, reason="boom", steps=1, final_text="")
    )
    message, end = changes
    assert isinstance(message.item, MessageView)
    assert message.item.text == "mine"
    assert message.item.final
    assert message.item.cut is None
    assert isinstance(end.item, TurnEndView)
    assert (end.item.outcome, end.item.reason, end.item.steps) == (TurnOutcome.ERROR, "boom", 1)
    other = view.items()[0]
    assert isinstance(other, MessageView)
    assert not other.final


# --- tool calls: every phase -----------------------------------------------------------------


def run_one_call(view: TranscriptView, e: Events, *, ask: bool = False) -> list[Change]:
    """announced → committed → (approval) → running with output → finished ok."""
    out: list[Change] = []
    out += view.apply(e(ev.ToolCallAnnounced, step=1, call_id="c1", name="bash"))
    args = freeze({"command": "echo hi"})
    out += view.apply(
        e(ev.AssistantMessageCommitted, step=1, text="", tool_calls=(("c1", "bash", args),))
    )
    if ask:
        out += view.apply(
            e(
                ev.PermissionRequested,
                request_id="r1",
                call_id="c1",
                tool_id="bash",
                arguments=args,
                summary="bash: echo hi",
            )
        )
        out += view.apply(
            e(ev.PermissionAnswered, request_id="r1", call_id="c1", decision="allow_once")
        )
    out += view.apply(
        e(ev.ToolCallStarted, ts=200.0, call_id="c1", name="bash", tool_id="bash", arguments=args)
    )
    out += view.apply(e(ev.ToolOutputDelta, call_id="c1", text="h"))
    out += view.apply(e(ev.ToolOutputDelta, call_id="c1", text="i\n"))
    out += view.apply(
        e(
            ev.ToolCallFinished,
            ts=201.5,
            call_id="c1",
            name="bash",
            status=ToolStatus.OK,
            content="hi\n",
            started=True,
        )
    )
    return out


def test_a_call_goes_announced_committed_running_finished(e: Events) -> None:
    view = TranscriptView()
    changes = run_one_call(view, e)
    phases = [tool_of(c).phase for c in changes]
    assert phases == [ToolPhase.ANNOUNCED] * 2 + [ToolPhase.RUNNING] * 3 + [ToolPhase.FINISHED]
    assert changes[0].kind is ChangeKind.ADDED
    assert all(c.kind is ChangeKind.UPDATED for c in changes[1:])
    assert [c.committed_now for c in changes] == [False, True, False, False, False, False]
    assert [c.entered(ToolPhase.RUNNING) for c in changes] == [0, 0, 1, 0, 0, 0]
    assert [c.entered(ToolPhase.FINISHED) for c in changes] == [0, 0, 0, 0, 0, 1]
    assert [c.appended for c in changes[3:5]] == ["h", "i\n"]
    assert tool_of(changes[4]).output == "hi\n"
    done = tool_of(changes[-1])
    assert (done.status, done.content, done.started) == (ToolStatus.OK, "hi\n", True)
    assert done.duration == pytest.approx(1.5)
    assert done.args == {"command": "echo hi"}
    assert done.tool_id == "bash"
    assert view.open_tools() == []


def test_a_running_calls_elapsed_time_comes_from_its_start(e: Events) -> None:
    view = TranscriptView()
    view.apply(e(ev.ToolCallStarted, ts=50.0, call_id="c", name="bash", tool_id="bash"))
    tool = view.tool("c")
    assert tool is not None
    assert tool.duration is None
    assert tool.elapsed(now=52.0) == pytest.approx(2.0)


def test_approval_waits_then_returns_the_call_to_announced_until_it_starts(e: Events) -> None:
    view = TranscriptView()
    changes = run_one_call(view, e, ask=True)
    asked = tool_of(changes[2])
    assert asked.phase is ToolPhase.AWAITING_APPROVAL
    assert asked.permission is not None
    assert asked.permission.request_id == "r1"
    assert asked.permission.summary == "bash: echo hi"
    assert changes[2].entered(ToolPhase.AWAITING_APPROVAL)
    answered, approval = changes[3], changes[4]
    assert tool_of(answered).phase is ToolPhase.ANNOUNCED
    assert tool_of(answered).permission is None
    assert tool_of(answered).decision == "allow_once"
    assert approval.kind is ChangeKind.ADDED
    assert approval.item == ApprovalView(approval.item.key, T, "c1", "r1", "allow_once")
    assert tool_of(changes[5]).phase is ToolPhase.RUNNING


def test_a_denied_call_finishes_without_starting(e: Events) -> None:
    view = TranscriptView()
    view.apply(e(ev.AssistantMessageCommitted, step=1, text="", tool_calls=(("c", "bash", {}),)))
    view.apply(e(ev.PermissionRequested, request_id="r", call_id="c", tool_id="bash", summary="x"))
    view.apply(e(ev.PermissionAnswered, request_id="r", call_id="c", decision="deny"))
    change = only(
        view.apply(
            e(
                ev.ToolCallFinished,
                call_id="c",
                name="bash",
                status=ToolStatus.DENIED,
                content="denied: no",
                started=False,
                denied_by=DeniedBy.USER,
            )
        )
    )
    tool = tool_of(change)
    assert change.entered(ToolPhase.FINISHED)
    assert (tool.status, tool.denied_by, tool.started) == (ToolStatus.DENIED, DeniedBy.USER, False)
    assert tool.started_at is None
    assert tool.ended_at is None
    assert tool.duration is None
    assert tool.decision == "deny"


def test_cancel_mid_run_keeps_the_partial_output_and_the_honest_result(e: Events) -> None:
    view = TranscriptView()
    view.apply(e(ev.ToolCallStarted, ts=10.0, call_id="c", name="bash", tool_id="bash"))
    view.apply(e(ev.ToolOutputDelta, call_id="c", text="partial line\n"))
    finished = only(
        view.apply(
            e(
                ev.ToolCallFinished,
                ts=12.0,
                call_id="c",
                name="bash",
                status=ToolStatus.CANCELLED,
                content="cancelled after 2.0 s\npartial line",
                started=True,
            )
        )
    )
    tool = tool_of(finished)
    assert tool.status is ToolStatus.CANCELLED
    assert tool.started
    assert tool.output == "partial line\n"
    assert tool.duration == pytest.approx(2.0)
    ended = view.apply(
        e(ev.TurnEnded, outcome=TurnOutcome.CANCELLED, reason="Ctrl-C", steps=1, final_text="")
    )
    assert [type(c.item) for c in ended] == [TurnEndView]


def test_a_turn_that_ends_with_a_call_open_finishes_it_as_cancelled(e: Events) -> None:
    view = TranscriptView()
    view.apply(e(ev.ToolCallStarted, ts=10.0, call_id="run", name="bash", tool_id="bash"))
    view.apply(e(ev.AssistantMessageCommitted, step=1, text="", tool_calls=(("wait", "x", {}),)))
    changes = view.apply(
        e(
            ev.TurnEnded,
            ts=13.0,
            outcome=TurnOutcome.INTERRUPTED,
            reason="crash",
            steps=1,
            final_text="",
        )
    )
    running, waiting, end = (c.item for c in changes)
    assert isinstance(running, ToolCallView)
    assert isinstance(waiting, ToolCallView)
    assert running.status is waiting.status is ToolStatus.CANCELLED
    assert running.started
    assert running.duration == pytest.approx(3.0)
    assert not waiting.started
    assert waiting.ended_at is None
    assert all(c.entered(ToolPhase.FINISHED) for c in changes[:2])
    assert isinstance(end, TurnEndView)
    assert end.outcome is TurnOutcome.INTERRUPTED


def test_a_successful_edit_carries_its_diff(e: Events) -> None:
    view = TranscriptView()
    args = freeze({"path": "a.txt", "old_text": "x", "new_text": "y"})
    view.apply(
        e(ev.ToolCallStarted, call_id="c", name="edit_file", tool_id="edit_file", arguments=args)
    )
    ok = e(
        ev.ToolCallFinished,
        call_id="c",
        name="edit_file",
        status=ToolStatus.OK,
        content="edited",
        started=True,
    )
    assert tool_of(only(view.apply(ok))).diff == DiffView("a.txt", "x", "y")
    view2 = TranscriptView()
    view2.apply(
        e(ev.ToolCallStarted, call_id="c", name="edit_file", tool_id="edit_file", arguments=args)
    )
    failed = dataclasses.replace(ok, status=ToolStatus.ERROR)
    assert tool_of(only(view2.apply(failed))).diff is None


def test_output_of_a_call_never_seen_before_is_shown_as_running(e: Events) -> None:
    view = TranscriptView()  # a subscriber that attached mid-turn
    change = only(view.apply(e(ev.ToolOutputDelta, call_id="c", text="x")))
    assert change.kind is ChangeKind.ADDED
    assert tool_of(change).phase is ToolPhase.RUNNING
    assert tool_of(change).name == "tool"


def test_malformed_arguments_are_none_and_args_is_empty(e: Events) -> None:
    view = TranscriptView()
    change = only(
        view.apply(
            e(ev.AssistantMessageCommitted, step=1, text="", tool_calls=(("c", "bash", None),))
        )
    )
    assert tool_of(change).arguments is None
    assert tool_of(change).args == {}


# --- notices, plans, compaction, modes -------------------------------------------------------


def test_notices_plans_modes_and_users_are_items_in_order(e: Events) -> None:
    view = TranscriptView()
    view.apply(e(ev.UserMessageCommitted, text="hi", note="prev cut"))
    view.apply(e(ev.Notice, level="warning", text="retrying"))
    items = freeze([{"content": "a", "status": "in_progress"}, {"content": "b"}, "junk"])
    view.apply(e(ev.PlanUpdated, items=items))
    view.apply(e(ev.ModeChanged, mode="plan"))
    user, notice, plan, mode = view.items()
    assert isinstance(user, UserView)
    assert (user.text, user.note) == ("hi", "prev cut")
    assert isinstance(notice, NoticeView)
    assert (notice.level, notice.seq) == ("warning", 2)
    assert isinstance(plan, PlanView)
    assert plan.entries == (PlanEntry("a", "in_progress"), PlanEntry("b", "pending"))
    assert mode.mode == "plan"  # type: ignore[union-attr]


def test_a_compaction_is_one_item_from_start_to_end(e: Events) -> None:
    view = TranscriptView()
    started = only(view.apply(e(ev.CompactionStarted, reason="auto", tokens_before=9000)))
    ended = only(
        view.apply(
            e(
                ev.CompactionEnded,
                outcome="compacted",
                tokens_before=9000,
                tokens_after=1000,
                reason="summarized 12 messages",
            )
        )
    )
    assert started.kind is ChangeKind.ADDED
    assert ended.kind is ChangeKind.UPDATED
    assert ended.item == CompactionView(
        started.item.key, T, "auto", 9000, "compacted", 1000, "summarized 12 messages"
    )


def test_events_that_show_nothing_change_nothing(e: Events) -> None:
    view = TranscriptView()
    assert view.apply(e(ev.StepStarted, step=1, model="m")) == ()
    assert view.apply(e(ev.ModelChanged, model="m", model_id="m", provider="anthropic")) == ()
    assert view.items() == []


def test_views_are_frozen(e: Events) -> None:
    view = TranscriptView()
    item = only(view.apply(e(ev.TextDelta, step=1, text="x"))).item
    assert isinstance(item, MessageView)
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.text = "changed"  # type: ignore[misc]


def test_without_retention_settled_items_are_forgotten_at_the_turns_end(e: Events) -> None:
    view = TranscriptView(retain=False)
    run_one_call(view, e)
    view.apply(e(ev.TextDelta, step=2, text="done"))
    assert len(view.items()) == 2
    view.apply(e(ev.TurnEnded, outcome=TurnOutcome.COMPLETED, reason="", steps=2, final_text=""))
    assert view.items() == []


# --- live and replayed from the store give the same view -----------------------------------

ASK_SCENARIO = {
    "rules": [
        {
            "match": "touch",
            "replies": [
                {
                    "text": "Running it.",
                    "tool_calls": [{"name": "bash", "arguments": {"command": "echo made"}}],
                },
                {"text": "finished"},
            ],
        }
    ]
}

SLOW_SCENARIO = {
    "rules": [
        {
            "match": "slow",
            "replies": [
                {
                    "tool_calls": [
                        {"name": "bash", "arguments": {"command": "echo started; sleep 30"}}
                    ]
                },
                {"text": "never"},
            ],
        }
    ]
}


async def test_a_stored_history_replays_to_the_live_view(tmp_path: Path) -> None:
    live = TranscriptView()
    async with (
        SqliteStore(tmp_path / "db.sqlite") as store,
        session_on(
            ASK_SCENARIO,
            "anthropic",
            tmp_path,
            store=store,
            permission_mode=PermissionMode.DEFAULT,
        ) as (session, _server, _),
    ):
        with session.subscribe() as sub:
            turn_id = await session.submit("touch it")
            async for event in sub:
                live.apply(event)
                if isinstance(event, ev.PermissionRequested):
                    session.answer_permission(event.request_id, ApprovalDecision.allow_once())
                if isinstance(event, ev.TurnEnded) and event.turn_id == turn_id:
                    break
        stored = await session.events_since(0)
    replayed = TranscriptView.replay(stored)
    assert replayed.items() == live.items()
    tool = next(i for i in live.items() if isinstance(i, ToolCallView))
    assert (tool.phase, tool.status, tool.decision) == (
        ToolPhase.FINISHED,
        ToolStatus.OK,
        "allow_once",
    )
    assert "made" in tool.output


async def test_a_call_cancelled_mid_run_replays_with_its_partial_output(tmp_path: Path) -> None:
    live = TranscriptView()
    async with (
        SqliteStore(tmp_path / "db.sqlite") as store,
        session_on(SLOW_SCENARIO, "anthropic", tmp_path, store=store) as (session, _server, _),
    ):
        with session.subscribe() as sub:
            turn_id = await session.submit("slow")
            async for event in sub:
                for change in live.apply(event):
                    if change.appended and isinstance(change.item, ToolCallView):
                        session.cancel("test cancel")
                if isinstance(event, ev.TurnEnded) and event.turn_id == turn_id:
                    break
        stored = await session.events_since(0)
    replayed = TranscriptView.replay(stored)
    assert replayed.items() == live.items()
    tool = next(i for i in live.items() if isinstance(i, ToolCallView))
    assert tool.status is ToolStatus.CANCELLED
    assert tool.started
    assert tool.output.startswith("started")
    end = live.items()[-1]
    assert isinstance(end, TurnEndView)
    assert end.outcome is TurnOutcome.CANCELLED
