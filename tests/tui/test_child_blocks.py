"""A `task` call's child session as a nested block under the call's line (no terminal)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.permissions.approval import ApprovalDecision
from rawtrio.tui.app import ChatApp
from rawtrio.tui.blocks import ChildBlock, Transcript
from rawtrio.tui.host import ChatSetup

P, C, G = "parent", "child", "grandchild"


def screen_text(transcript: Transcript, rows: int = 40) -> str:
    canvas = transcript.listbox.render((100, rows))
    return "\n".join(line.decode().rstrip() for line in canvas.text)


class Child:
    """Events of one child session, wrapped as its parent sees them."""

    def __init__(self, session: str, call_id: str, turn: str, seq: list[int]) -> None:
        self.session, self.call_id, self.turn, self.seq = session, call_id, turn, seq
        self.own = 0

    def wrap(self, e: ev.Event) -> ev.SubagentEvent:
        self.seq[0] += 1
        return ev.SubagentEvent(
            session_id=P,
            seq=self.seq[0],
            turn_id="pt",
            call_id=self.call_id,
            child_session_id=self.session,
            event=freeze(ev.event_to_json(e)),
        )

    def n(self) -> int:
        self.own += 1
        return self.own

    def tool_started(self, call_id: str, name: str, **args: str) -> ev.Event:
        return ev.ToolCallStarted(
            session_id=self.session,
            seq=self.n(),
            turn_id=self.turn,
            call_id=call_id,
            name=name,
            tool_id=name,
            arguments=freeze(args),
            ts=100.0,
        )

    def tool_finished(self, call_id: str, name: str, status: ToolStatus) -> ev.Event:
        return ev.ToolCallFinished(
            session_id=self.session,
            seq=self.n(),
            turn_id=self.turn,
            call_id=call_id,
            name=name,
            status=status,
            content="done",
            started=True,
            ts=101.0,
        )

    def text(self, text: str) -> ev.Event:
        return ev.TextDelta(
            session_id=self.session, seq=self.n(), turn_id=self.turn, step=1, text=text
        )

    def ended(self, outcome: TurnOutcome, reason: str) -> ev.Event:
        return ev.TurnEnded(
            session_id=self.session,
            seq=self.n(),
            turn_id=self.turn,
            outcome=outcome,
            reason=reason,
            steps=1,
        )


def task_started(
    seq: int,
    call_id: str = "task1",
    description: str = "count files",
    agent: str | None = "reader",
) -> list[ev.Event]:
    args = freeze({"description": description, "prompt": "child work"})
    return [
        ev.UserMessageCommitted(session_id=P, seq=seq, turn_id="pt", text="delegate"),
        ev.ToolCallStarted(
            session_id=P,
            seq=seq + 1,
            turn_id="pt",
            call_id=call_id,
            name="task",
            tool_id="task",
            arguments=args,
            ts=100.0,
        ),
        ev.SubagentStarted(
            session_id=P,
            seq=seq + 2,
            turn_id="pt",
            call_id=call_id,
            child_session_id=C,
            description=description,
            agent=agent,
            depth=1,
        ),
    ]


def test_the_child_is_one_line_under_its_call_live_then_expanded_with_its_tool_lines() -> None:
    transcript = Transcript()
    seq = [10]
    for e in task_started(1):
        transcript.apply(e)
    child = Child(C, "task1", "ct", seq)
    transcript.apply(child.wrap(child.text("Looking at the files.\n")))
    transcript.apply(child.wrap(child.tool_started("k1", "bash", command="ls -l")))
    lines = screen_text(transcript).splitlines()
    task_line = next(n for n, line in enumerate(lines) if line.startswith("task count files"))
    summary = lines[task_line + 1]
    assert summary.startswith("  └ agent reader (count files): 1 tool, ")
    assert "running…" in summary
    assert "bash ls -l" in summary  # what it runs now
    assert "Looking at the files." not in screen_text(transcript)  # collapsed

    transcript.select_tool(-1)  # the task call (the child's lines are not shown)
    assert transcript.selected is transcript.tools["task1"]
    transcript.toggle_selected()  # Enter: the child block expands with the call
    text = screen_text(transcript)
    assert "    Looking at the files." in text
    assert "    bash ls -l" in text  # its tool line, indented, running
    assert "bash ls -l  ⠋ running" in text or "bash ls -l" in text
    transcript.apply(child.wrap(child.tool_finished("k1", "bash", ToolStatus.OK)))
    assert "    ✓ bash ls -l  ok" in screen_text(transcript)
    transcript.apply(child.wrap(child.ended(TurnOutcome.COMPLETED, "done")))
    assert "└ agent reader (count files): 1 tool, ✓ done" in screen_text(transcript)

    transcript.toggle_selected()  # and collapsed again
    text = screen_text(transcript)
    assert "✓ bash ls -l" not in text
    assert "└ agent reader (count files): 1 tool, ✓ done" in text


def test_ctrl_o_expands_every_child_and_a_grandchild_nests_again() -> None:
    transcript = Transcript()
    seq = [10]
    for e in task_started(1):
        transcript.apply(e)
    child = Child(C, "task1", "ct", seq)
    grandchild = Child(G, "inner", "gt", [0])
    transcript.apply(
        child.wrap(child.tool_started("inner", "task", description="look deeper", prompt="p"))
    )
    started = ev.SubagentStarted(
        session_id=C,
        seq=child.n(),
        turn_id="ct",
        call_id="inner",
        child_session_id=G,
        description="look deeper",
        agent=None,
        depth=2,
    )
    transcript.apply(child.wrap(started))

    def nested(e: ev.Event) -> ev.Event:  # a grandchild's event, as the child relays it
        inner = grandchild.wrap(e)
        return child.wrap(
            ev.SubagentEvent(
                session_id=C,
                seq=child.n(),
                turn_id="ct",
                call_id="inner",
                child_session_id=G,
                event=inner.event,
            )
        )

    transcript.apply(nested(grandchild.tool_started("g1", "grep", pattern="needle")))
    transcript.toggle_details()  # Ctrl-O: every call's details, every child's block
    lines = screen_text(transcript).splitlines()
    assert any(line.startswith("  └ agent reader (count files): 1 tool") for line in lines)
    assert any(line.startswith("      └ subagent (look deeper): 1 tool") for line in lines)
    assert any(line.startswith("        grep needle") for line in lines), lines

    # The grandchild's call can be selected and its block collapsed on its own.
    selectable = transcript.selectable_calls()
    assert [t.call_id for t in selectable] == ["task1", "inner", "g1"]
    transcript.select_tool(-1)
    transcript.select_tool(-1)
    assert transcript.selected is not None
    assert transcript.selected.call_id == "inner"
    transcript.toggle_selected()
    lines = screen_text(transcript).splitlines()
    assert not any(line.startswith("        grep needle") for line in lines)
    assert any(
        line.startswith("      └ subagent (look deeper): 1 tool") and line.endswith("grep needle")
        for line in lines
    ), lines  # collapsed: what the grandchild runs now, on its summary line
    assert any(line.startswith("    ▸ task look deeper") for line in lines)
    transcript.toggle_details()  # Ctrl-O again: all collapsed, the single choices forgotten
    assert transcript.selected is transcript.tools["task1"]  # the hidden call's `task` call
    lines = screen_text(transcript).splitlines()
    assert not any(line.startswith("    task look deeper") for line in lines)
    assert any(line.startswith("  └ agent reader (count files): 1 tool") for line in lines)


def test_a_cancelled_child_says_so_and_so_do_its_calls() -> None:
    transcript = Transcript()
    seq = [10]
    for e in task_started(1):
        transcript.apply(e)
    child = Child(C, "task1", "ct", seq)
    transcript.apply(child.wrap(child.tool_started("k1", "bash", command="sleep 60")))
    transcript.apply(child.wrap(child.tool_finished("k1", "bash", ToolStatus.CANCELLED)))
    transcript.apply(child.wrap(child.ended(TurnOutcome.CANCELLED, "cancelled by the user")))
    transcript.apply(
        ev.SubagentEnded(
            session_id=P,
            seq=50,
            turn_id="pt",
            call_id="task1",
            child_session_id=C,
            outcome=TurnOutcome.CANCELLED,
            reason="cancelled by the user",
        )
    )
    text = screen_text(transcript)
    assert "└ agent reader (count files): 1 tool, ✂ cancelled" in text
    transcript.toggle_details()
    assert "✂ bash sleep 60  cancelled" in screen_text(transcript)


def test_a_child_without_an_ending_settles_with_its_call() -> None:
    """A crashed session's history: the child never ended; its call recovered."""
    transcript = Transcript()
    for e in task_started(1):
        transcript.apply(e)
    transcript.apply(
        ev.ToolCallFinished(
            session_id=P,
            seq=20,
            turn_id="pt",
            call_id="task1",
            name="task",
            status=ToolStatus.OUTCOME_UNKNOWN,
            content="the session stopped while it ran",
            started=True,
            ts=101.0,
        )
    )
    assert "└ agent reader (count files): 0 tools, ? interrupted" in screen_text(transcript)


def test_a_history_that_begins_after_the_child_started_still_nests_it() -> None:
    transcript = Transcript()
    for e in task_started(1)[:2]:  # no subagent_started
        transcript.apply(e)
    child = Child(C, "task1", "ct", [10])
    transcript.apply(child.wrap(child.tool_started("k1", "read_file", path="a.py")))
    block = transcript.children["task1"]
    assert isinstance(block, ChildBlock)
    assert block.label == "subagent (count files)"
    assert "└ subagent (count files): 1 tool" in screen_text(transcript)


async def test_the_permission_prompt_names_the_child_that_asks() -> None:
    async with trio.open_nursery() as nursery:
        app = ChatApp(ChatSetup(runtime=None, options=None, agent="-", history_path=None), nursery)

        answers: list[tuple[str, str]] = []

        class Session:  # what the prompt needs of a session
            id = P
            running_turn = "pt"
            model_name = "test-model"
            policy = SimpleNamespace(mode=SimpleNamespace(value="default"))
            cwd = Path.cwd()

            def answer_permission(self, request_id: str, decision: ApprovalDecision) -> None:
                answers.append((request_id, str(decision.kind)))

        app.session = Session()  # type: ignore[assignment]
        for e in task_started(1):
            app.on_event(e, replay=False)
        app.on_event(
            ev.PermissionRequested(
                session_id=P,
                seq=30,
                turn_id="pt",
                call_id="task1",
                request_id="r1",
                tool_id="bash",
                summary="[subagent count files] run: rm -r build",
                options=("allow_once", "deny"),
                arguments=freeze({"command": "rm -r build"}),
            ),
            replay=False,
        )
        assert app.prompt is not None
        canvas = app.prompt.render((90,))
        text = "\n".join(line.decode() for line in canvas.text)
        assert "asked by agent reader (count files)" in text
        assert "$ rm -r build" in text
        app.on_keys(["y"], [])
        assert answers == [("r1", "allow_once")]
        nursery.cancel_scope.cancel()


def test_a_childs_message_shows_its_last_lines_while_streaming_then_its_first() -> None:
    transcript = Transcript()
    for e in task_started(1):
        transcript.apply(e)
    child = Child(C, "task1", "ct", [10])
    text = "".join(f"line {n}\n" for n in range(1, 7))
    transcript.apply(child.wrap(child.text(text)))
    transcript.toggle_details()
    lines = screen_text(transcript).splitlines()
    shown = [line.strip() for line in lines if line.startswith("    ")]
    assert shown == ["…", "line 4", "line 5", "line 6"]
    committed = ev.AssistantMessageCommitted(
        session_id=C, seq=child.n(), turn_id="ct", step=1, text=text
    )
    transcript.apply(child.wrap(committed))
    lines = screen_text(transcript).splitlines()
    shown = [line.strip() for line in lines if line.startswith("    ")]
    assert shown == ["line 1", "line 2", "line 3", "… (3 more lines)"]


def test_two_children_at_once_each_sit_under_their_own_call() -> None:
    transcript = Transcript()
    events = task_started(1, "task1")
    # The same step: a second call, a second child.
    second = task_started(4, "task2", "other job", None)[1:]
    for e in [events[0], events[1], second[0], events[2], second[1]]:
        transcript.apply(e)
    first, other = Child(C, "task1", "ct", [10]), Child("c2", "task2", "c2t", [20])
    transcript.apply(other.wrap(other.tool_started("o1", "glob", pattern="*.py")))
    transcript.apply(first.wrap(first.tool_started("k1", "bash", command="ls")))
    lines = [line for line in screen_text(transcript).splitlines() if line]
    assert lines[1].startswith("task count files")
    assert lines[2].startswith("  └ agent reader (count files): 1 tool")
    assert lines[2].endswith("bash ls")
    assert lines[3].startswith("task other job")
    assert lines[4].startswith("  └ subagent (other job): 1 tool")
    assert lines[4].endswith("glob *.py")
