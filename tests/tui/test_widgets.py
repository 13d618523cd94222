"""The chat's pieces without a terminal: transcript from events, keys, prompt editing."""

from __future__ import annotations

from pathlib import Path

import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.tui.app import ChatApp
from rawtrio.tui.blocks import Transcript
from rawtrio.tui.editor import History, PromptEdit
from rawtrio.tui.host import ChatSetup

S = "session"


def screen_text(transcript: Transcript, rows: int = 30) -> str:
    canvas = transcript.listbox.render((80, rows))
    return "\n".join(line.decode().rstrip() for line in canvas.text)


def cancelled_turn() -> list[ev.Event]:
    args = freeze({"command": "sleep 60"})
    return [
        ev.UserMessageCommitted(session_id=S, seq=1, turn_id="t", text="wait a minute"),
        ev.TextDelta(session_id=S, seq=2, turn_id="t", step=1, text="Sleeping **no"),
        ev.TextDelta(session_id=S, seq=3, turn_id="t", step=1, text="w**."),
        ev.ToolCallAnnounced(session_id=S, seq=4, turn_id="t", step=1, call_id="c1", name="bash"),
        ev.AssistantMessageCommitted(
            session_id=S,
            seq=5,
            turn_id="t",
            step=1,
            text="Sleeping **now**.",
            tool_calls=(("c1", "bash", args),),
        ),
        ev.ToolCallStarted(
            session_id=S,
            seq=6,
            turn_id="t",
            call_id="c1",
            name="bash",
            tool_id="bash",
            arguments=args,
            ts=100.0,
        ),
        ev.ToolOutputDelta(session_id=S, seq=7, turn_id="t", call_id="c1", text="partial\n"),
        ev.ToolCallFinished(
            session_id=S,
            seq=8,
            turn_id="t",
            call_id="c1",
            name="bash",
            status=ToolStatus.CANCELLED,
            content="killed after 2.5 s",
            started=True,
            ts=102.5,
        ),
        ev.TurnEnded(
            session_id=S,
            seq=9,
            turn_id="t",
            outcome=TurnOutcome.CANCELLED,
            reason="cancelled by the user (Ctrl-C)",
            steps=1,
        ),
    ]


def test_a_turn_renders_as_prompt_reply_one_tool_line_and_outcome() -> None:
    transcript = Transcript()
    for e in cancelled_turn():
        transcript.apply(e)
    lines = screen_text(transcript).splitlines()
    assert lines[:4] == [
        "› wait a minute",
        "Sleeping now.",
        "✂ bash sleep 60  cancelled  2.5s",
        "── turn cancelled: cancelled by the user (Ctrl-C) ──",
    ]


def test_details_show_the_input_and_output_of_a_tool_call() -> None:
    transcript = Transcript()
    for e in cancelled_turn():
        transcript.apply(e)
    transcript.toggle_details()
    text = screen_text(transcript)
    assert 'input: {"command": "sleep 60"}' in text
    assert "killed after 2.5 s" in text


def test_a_long_history_renders_only_the_visible_rows() -> None:
    transcript = Transcript()
    for n in range(10_000):
        transcript.apply(ev.UserMessageCommitted(session_id=S, seq=n + 1, text=f"message {n}"))
    rendered: list[int] = []
    for n, block in enumerate(transcript.walker):
        original = block.markup

        def counted(original=original, n=n):  # type: ignore[no-untyped-def]
            rendered.append(n)
            return original()

        block.markup = counted
        block.changed()
    text = screen_text(transcript, rows=20)
    assert text.splitlines()[-1] == "› message 9999"
    assert len(rendered) < 100


async def test_keys_paste_newline_and_clear() -> None:
    async with trio.open_nursery() as nursery:
        app = ChatApp(ChatSetup(runtime=None, options=None, agent="-", history_path=None), nursery)
        app.on_keys(["begin paste", "a", "enter", "b", "end paste"], [])
        assert app.edit.edit_text == "a\nb"  # a pasted newline never sends
        app.on_keys(["enter"], [10])  # Ctrl-J
        app.on_keys(["meta enter", "c"], [])
        assert app.edit.edit_text == "a\nb\n\nc"
        app.edit.set("")
        big = ["begin paste", *("line of text enter " * 20_000).split(" "), "end paste"]
        app.on_keys([k for k in big if k], [])
        assert app.edit.edit_text.count("\n") == 20_000
        app.on_keys(["ctrl c"], [3])  # idle: clears, and arms the exit
        assert app.edit.edit_text == ""
        assert not app.exit_requested.is_set()
        app.on_keys(["ctrl c"], [3])
        assert app.exit_requested.is_set()
        nursery.cancel_scope.cancel()


async def test_ctrl_d_leaves_only_on_an_empty_prompt() -> None:
    async with trio.open_nursery() as nursery:
        app = ChatApp(ChatSetup(runtime=None, options=None, agent="-", history_path=None), nursery)
        app.on_keys(["x", "ctrl d"], [])
        assert not app.exit_requested.is_set()
        app.on_keys(["backspace", "ctrl d"], [])
        assert app.exit_requested.is_set()
        nursery.cancel_scope.cancel()


def test_completion_of_commands_and_paths(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / "setup.cfg").write_text("")
    edit = PromptEdit(History(None))
    edit.set("/he")
    edit.completion(["/help", "/new"], tmp_path)
    assert edit.edit_text == "/help "
    edit.set("/c")
    _, found = edit.completion(["/compact", "/cost", "/clear"], tmp_path)
    assert found == ["/compact", "/cost", "/clear"]
    edit.set("look at @s")
    _, found = edit.completion([], tmp_path)
    assert found == ["@setup.cfg", "@src/"]
    edit.set("look at @src/m")
    edit.completion([], tmp_path)
    assert edit.edit_text == "look at @src/main.py "


def test_history_is_kept_across_sessions(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    first = History(path)
    first.add("one\ntwo")
    first.add("three")
    edit = PromptEdit(History(path))
    edit.keypress((40,), "up")
    assert edit.edit_text == "three"
    edit.keypress((40,), "up")
    assert edit.edit_text == "one\ntwo"


def two_tool_calls() -> list[ev.Event]:
    events: list[ev.Event] = [
        ev.UserMessageCommitted(session_id=S, seq=1, turn_id="t", text="look twice")
    ]
    for n, command in ((1, "echo first"), (2, "echo second")):
        args = freeze({"command": command})
        events += [
            ev.ToolCallStarted(
                session_id=S,
                seq=10 * n,
                turn_id="t",
                call_id=f"c{n}",
                name="bash",
                tool_id="bash",
                arguments=args,
                ts=100.0,
            ),
            ev.ToolCallFinished(
                session_id=S,
                seq=10 * n + 1,
                turn_id="t",
                call_id=f"c{n}",
                name="bash",
                status=ToolStatus.OK,
                content=f"output of call {n}",
                started=True,
                ts=100.5,
            ),
        ]
    return events


def test_one_tool_call_is_selected_and_its_details_toggled_alone() -> None:
    transcript = Transcript()
    for e in two_tool_calls():
        transcript.apply(e)
    assert "▸" not in screen_text(transcript)
    transcript.select_tool(-1)  # nothing selected: the last call
    transcript.select_tool(-1)  # the one before it
    transcript.select_tool(-1)  # stays on the first
    lines = screen_text(transcript).splitlines()
    assert "▸ ✓ bash echo first  ok  0.5s" in lines
    assert "✓ bash echo second  ok  0.5s" in lines
    assert transcript.toggle_selected()
    text = screen_text(transcript)
    assert 'input: {"command": "echo first"}' in text
    assert "  output of call 1" in text.splitlines()
    assert 'echo second"' not in text
    assert "output of call 2" not in text
    transcript.select_tool(1)
    transcript.toggle_selected()
    text = screen_text(transcript)
    assert "output of call 1" in text
    assert "output of call 2" in text
    transcript.toggle_selected()  # collapse the second again
    assert "output of call 2" not in screen_text(transcript)
    transcript.deselect()
    text = screen_text(transcript)
    assert "▸" not in text
    assert "output of call 1" in text  # deselecting keeps what was expanded
    transcript.toggle_details()  # Ctrl-O: all of them, the single choices forgotten
    text = screen_text(transcript)
    assert "output of call 1" in text
    assert "output of call 2" in text
    transcript.toggle_details()
    assert "output of call" not in screen_text(transcript)


def test_selecting_in_a_long_history_renders_only_the_visible_rows() -> None:
    transcript = Transcript()
    for e in two_tool_calls():
        transcript.apply(e)
    for n in range(5_000):
        transcript.apply(ev.UserMessageCommitted(session_id=S, seq=100 + n, text=f"message {n}"))
    rendered: list[int] = []
    for n, block in enumerate(transcript.walker):
        original = block.markup

        def counted(original=original, n=n):  # type: ignore[no-untyped-def]
            rendered.append(n)
            return original()

        block.markup = counted
        block.changed()
    transcript.select_tool(-1)
    transcript.toggle_selected()
    text = screen_text(transcript, rows=20)
    assert "output of call 2" in text  # scrolled to the selected call
    assert len(rendered) < 100
    transcript.deselect()  # back to following the end
    assert screen_text(transcript, rows=20).splitlines()[-1] == "› message 4999"


async def test_keys_select_toggle_and_typing_returns_to_the_prompt() -> None:
    async with trio.open_nursery() as nursery:
        app = ChatApp(ChatSetup(runtime=None, options=None, agent="-", history_path=None), nursery)
        for e in two_tool_calls():
            app.transcript.apply(e)
        app.on_keys(["meta up", "enter"], [])
        assert app.transcript.selected is app.transcript.tools["c2"]
        assert app.transcript.tools["c2"].shows_details
        assert app.edit.edit_text == ""  # Enter did not go to the prompt
        app.on_keys(["ctrl up", "ctrl down", "ctrl down", "enter"], [])
        assert not app.transcript.tools["c2"].shows_details
        app.on_keys(["h", "i"], [])  # typing: deselects and types
        assert app.transcript.selected is None
        assert app.edit.edit_text == "hi"
        app.on_keys(["meta down", "esc"], [])
        assert app.transcript.selected is None
        assert app.edit.edit_text == "hi"
        app.on_keys(["meta up", "ctrl o"], [])  # Ctrl-O: still every call
        assert app.transcript.selected is not None
        assert all(t.shows_details for t in app.transcript.tools.values())
        nursery.cancel_scope.cancel()
