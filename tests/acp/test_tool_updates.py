"""A tool call's ACP updates, from the transcript view's changes (no lifecycle in the mapper)."""

from __future__ import annotations

from typing import Any

from rawtrio import events as ev
from rawtrio.acp.updates import UpdateMapper, replay
from rawtrio.contracts import DeniedBy, ToolStatus
from rawtrio.frozen import freeze

EDIT = freeze({"path": "a.py", "old_text": "x", "new_text": "y"})


def events() -> list[ev.Event]:
    n = iter(range(1, 100))

    def e(cls: type[ev.Event], **fields: Any) -> Any:
        return cls(session_id="s", seq=next(n), turn_id="t", **fields)

    return [
        e(ev.ToolCallAnnounced, step=1, call_id="c1", name="edit_file"),
        e(ev.AssistantMessageCommitted, step=1, text="", tool_calls=(("c1", "edit_file", EDIT),)),
        e(ev.ToolCallStarted, call_id="c1", name="edit_file", tool_id="edit_file", arguments=EDIT),
        e(ev.ToolOutputDelta, call_id="c1", text="working"),
        e(
            ev.ToolCallFinished,
            call_id="c1",
            name="edit_file",
            status=ToolStatus.OK,
            content="edited",
            started=True,
        ),
        e(ev.ToolCallAnnounced, step=2, call_id="c2", name="bash"),
        e(ev.StreamInterrupted, step=2, partial_text="", reason="SIGINT"),
    ]


def test_a_call_is_announced_committed_running_and_completed_with_its_diff() -> None:
    mapper = UpdateMapper("/w")
    updates = [u for event in events() for u in mapper.updates(event)]
    assert [(u["sessionUpdate"], u.get("status")) for u in updates] == [
        ("tool_call", "pending"),
        ("tool_call_update", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", None),
        ("tool_call_update", "completed"),
        ("tool_call", "pending"),
        ("tool_call_update", "failed"),
    ]
    assert updates[1]["rawInput"] == {"path": "a.py", "old_text": "x", "new_text": "y"}
    assert updates[1]["locations"] == [{"path": "/w/a.py"}]
    assert updates[3]["content"][0]["content"]["text"] == "working"
    assert updates[4]["content"][0] == {
        "type": "diff",
        "path": "/w/a.py",
        "oldText": "x",
        "newText": "y",
    }
    assert updates[4]["rawOutput"] == {"status": "ok", "started": True}
    assert updates[6]["rawOutput"] == {"status": "cancelled", "started": False}
    assert "SIGINT" in updates[6]["content"][0]["content"]["text"]


def test_a_denied_call_fails_and_names_who_denied_it() -> None:
    mapper = UpdateMapper("/w")
    finished = ev.ToolCallFinished(
        session_id="s",
        seq=1,
        turn_id="t",
        call_id="c",
        name="bash",
        status=ToolStatus.DENIED,
        content="denied by rule",
        started=False,
        denied_by=DeniedBy.RULE,
    )
    (update,) = mapper.updates(finished)
    assert update["status"] == "failed"
    assert update["rawOutput"] == {"status": "denied", "started": False, "denied_by": "rule"}


def test_a_replay_merges_each_calls_updates_into_its_first() -> None:
    merged = replay(events(), "/w")
    assert [(u["sessionUpdate"], u["toolCallId"], u["status"]) for u in merged] == [
        ("tool_call", "c1", "completed"),
        ("tool_call", "c2", "failed"),
    ]
