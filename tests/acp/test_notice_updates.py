"""Notices of a turn (a model request being retried, what the turn changed) reach an ACP
editor as thoughts of their own; notices outside a turn do not."""

from __future__ import annotations

from rawtrio import events as ev
from rawtrio.acp.updates import UpdateMapper


def test_a_retry_notice_is_a_thought_of_its_own() -> None:
    text = "retrying in 4 s: 529 overloaded, retry 1 of 6"
    notice = ev.Notice(session_id="s", turn_id="t1", seq=7, level="warning", text=text)
    assert UpdateMapper("/").updates(notice) == [
        {
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": f"[{text}]\n"},
            "messageId": "t1-notice-7",
        }
    ]


def test_what_a_turn_changed_is_a_thought_without_the_chats_hint() -> None:
    text = (
        "2 files changed (+3 \u22121) \u2014 checkpoint 4; /diff shows them, /undo puts them back"
        "\n  not captured: big.bin (larger than the per-file limit)"
    )
    notice = ev.Notice(session_id="s", turn_id="t1", seq=9, level="info", text=text)
    assert UpdateMapper("/").updates(notice) == [
        {
            "sessionUpdate": "agent_thought_chunk",
            "content": {
                "type": "text",
                "text": "[2 files changed (+3 \u22121) \u2014 checkpoint 4\n"
                "  not captured: big.bin (larger than the per-file limit)]\n",
            },
            "messageId": "t1-notice-9",
        }
    ]


def test_a_notice_outside_a_turn_is_not_sent() -> None:
    notice = ev.Notice(session_id="s", turn_id=None, seq=3, level="info", text="a note")
    assert UpdateMapper("/").updates(notice) == []
