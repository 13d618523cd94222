"""The chat gives the C heap a turn freed back to the OS once it is idle (`rawtrio.heap`)."""

from __future__ import annotations

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.tui import app as chat
from rawtrio.tui.app import HEAP_RELEASE_DELAY_S, ChatApp
from rawtrio.tui.host import ChatSetup

S = "session"


def turn(turn_id: str, first_seq: int) -> list[ev.Event]:
    return [
        ev.UserMessageCommitted(session_id=S, seq=first_seq, turn_id=turn_id, text="hello"),
        ev.TextDelta(session_id=S, seq=first_seq + 1, turn_id=turn_id, step=1, text="Hi."),
        ev.TurnEnded(
            session_id=S,
            seq=first_seq + 2,
            turn_id=turn_id,
            outcome=TurnOutcome.COMPLETED,
            reason="done",
            steps=1,
        ),
    ]


@pytest.fixture
def releases(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When (trio clock) the chat asked for the heap to be released."""
    calls: list[float] = []

    def record() -> bool:
        calls.append(trio.current_time())
        return True

    monkeypatch.setattr(chat, "release_free_heap", record)
    return calls


def new_app(nursery: trio.Nursery) -> ChatApp:
    return ChatApp(ChatSetup(runtime=None, options=None, agent="-", history_path=None), nursery)


async def test_the_heap_is_released_once_the_chat_is_idle_after_a_turn(
    releases: list[float], autojump_clock: trio.abc.Clock
) -> None:
    async with trio.open_nursery() as nursery:
        app = new_app(nursery)
        for e in turn("t1", 1):
            app.on_event(e, replay=False)
        ended = trio.current_time()
        assert releases == []  # not at the turn's end: its last frames and clean-up first
        await trio.sleep(HEAP_RELEASE_DELAY_S * 4)
        assert releases == [pytest.approx(ended + HEAP_RELEASE_DELAY_S)]
        nursery.cancel_scope.cancel(reason="test over")


async def test_no_release_for_a_replayed_history_nor_once_the_next_turn_started(
    releases: list[float], autojump_clock: trio.abc.Clock
) -> None:
    async with trio.open_nursery() as nursery:
        app = new_app(nursery)
        for e in turn("t1", 1):  # a resumed session's history: nothing was freed by it
            app.on_event(e, replay=True)
        await trio.sleep(HEAP_RELEASE_DELAY_S * 4)
        assert releases == []
        first, second = turn("t2", 4), turn("t3", 7)
        for e in first:
            app.on_event(e, replay=False)
        app.on_event(second[0], replay=False)  # the next prompt, before the chat settled
        await trio.sleep(HEAP_RELEASE_DELAY_S * 4)
        assert releases == []  # busy again: not idle
        nursery.cancel_scope.cancel(reason="test over")
