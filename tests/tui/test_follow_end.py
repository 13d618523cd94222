"""While the chat follows the end, the last rows of the last block are on screen — also
once the transcript fills the screen and that block grows (a running tool's output line,
a reply taller than the screen). Widgets first, then the real chat in tmux."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from rawtrio import events as ev
from rawtrio.frozen import freeze
from rawtrio.tui.blocks import Transcript
from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import Isolation
from tests.tui.support import Pane
from tests.tui.test_widgets import screen_text

S = "session"
ROWS = 8


def full_transcript() -> tuple[Transcript, Iterator[int]]:
    """A transcript with more rows than the screen, following the end."""
    transcript = Transcript()
    seq = itertools.count(1)
    for n in range(3 * ROWS):
        transcript.apply(
            ev.UserMessageCommitted(session_id=S, seq=next(seq), turn_id=f"u{n}", text=f"p{n}")
        )
    return transcript, seq


def start_tool(transcript: Transcript, seq: Iterator[int]) -> None:
    args = freeze({"command": "make test"})
    for e in (
        ev.ToolCallAnnounced(
            session_id=S, seq=next(seq), turn_id="t", step=1, call_id="c", name="bash"
        ),
        ev.AssistantMessageCommitted(
            session_id=S,
            seq=next(seq),
            turn_id="t",
            step=1,
            text="",
            tool_calls=(("c", "bash", args),),
        ),
        ev.ToolCallStarted(
            session_id=S,
            seq=next(seq),
            turn_id="t",
            call_id="c",
            name="bash",
            tool_id="bash",
            arguments=args,
            ts=100.0,
        ),
    ):
        transcript.apply(e)


def test_a_running_tools_output_line_stays_on_a_full_screen() -> None:
    transcript, seq = full_transcript()
    start_tool(transcript, seq)
    assert screen_text(transcript, ROWS).splitlines()[-1].startswith("bash make test")
    for n in range(3):
        transcript.apply(
            ev.ToolOutputDelta(
                session_id=S, seq=next(seq), turn_id="t", call_id="c", text=f"step {n}\n"
            )
        )
        lines = screen_text(transcript, ROWS).splitlines()
        assert lines[-2].startswith("bash make test"), lines
        assert lines[-1] == f"  step {n}", lines
        transcript.tools["c"].tick()  # the ticker redraws the running line
        assert screen_text(transcript, ROWS).splitlines()[-1] == f"  step {n}"


def test_a_reply_taller_than_the_screen_shows_its_end_while_following() -> None:
    transcript, seq = full_transcript()
    text = "\n\n".join(f"paragraph {n}" for n in range(2 * ROWS))
    transcript.apply(ev.TextDelta(session_id=S, seq=next(seq), turn_id="t", step=1, text=text))
    assert screen_text(transcript, ROWS).splitlines()[-1] == f"paragraph {2 * ROWS - 1}"


def test_scrolled_up_the_view_stays_where_the_user_put_it() -> None:
    transcript, seq = full_transcript()
    start_tool(transcript, seq)
    transcript.listbox.keypress((80, ROWS), "page up")
    transcript.follow = False  # what the chat does on PgUp
    before = screen_text(transcript, ROWS)
    transcript.apply(
        ev.ToolOutputDelta(session_id=S, seq=next(seq), turn_id="t", call_id="c", text="step 1\n")
    )
    assert screen_text(transcript, ROWS) == before
    assert "bash make test" not in before


def test_a_short_transcript_starts_at_the_top() -> None:
    transcript = Transcript()
    transcript.apply(ev.UserMessageCommitted(session_id=S, seq=1, turn_id="u", text="hello"))
    assert screen_text(transcript, ROWS).splitlines()[0] == "› hello"


SCENARIO = {
    "rules": [
        {
            "match": "fill the screen",
            "replies": [{"text": "\n\n".join(f"paragraph {n}" for n in range(40))}],
        },
        {
            "match": "count slowly",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {
                                "command": "for i in $(seq 1 600); do echo step $i; sleep 0.1; done"
                            },
                        }
                    ]
                },
                {"text": "counted"},
            ],
        },
    ]
}


@pytest.fixture(scope="module")
def filling_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(SCENARIO, tmp_path_factory.mktemp("follow-model")) as fake:
        yield fake


def test_the_chat_shows_a_running_tools_output_once_the_screen_is_full(
    iso: Isolation, filling_model: FakeModel
) -> None:
    pane = Pane.start(
        iso,
        "--base-url",
        filling_model.base_url,
        "--sigterm-grace",
        "0.2",
        env={"ANTHROPIC_API_KEY": "test-key"},
    )
    try:
        pane.wait_for("ready │", "the session is open")
        pane.type("fill the screen")
        pane.keys("Enter")
        pane.wait_for("paragraph 39", "the end of a reply taller than the screen")
        pane.wait_for("ready │", "the turn ended")
        pane.type("count slowly")
        pane.keys("Enter")

        def output_under_the_running_line(screen: str) -> bool:
            lines = screen.splitlines()
            return any(
                "running" in line and nxt.strip().startswith("step ")
                for line, nxt in itertools.pairwise(lines)
            )

        pane.wait_for(output_under_the_running_line, "the tool's last output line on screen")
        pane.keys("C-c")
        pane.wait_for("turn cancelled", "the turn cancelled")
        pane.keys("C-c")
        pane.keys("C-c")
        pane.wait_ended()
    finally:
        pane.close()
