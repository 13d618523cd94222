"""Warnings during a turn (a model request being retried) reach an ACP editor."""

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


def test_an_info_notice_is_not_sent() -> None:
    notice = ev.Notice(session_id="s", turn_id="t1", seq=3, level="info", text="a note")
    assert UpdateMapper("/").updates(notice) == []
