"""A session's events over SSE: live in order with `id` = seq, `Last-Event-ID` replay
without gap or duplicate, a stored session that becomes live, permission requests
answered from the page (the first answer wins), and the end of a deleted session."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.dashboard.support import Dashboard
from tests.headless.support import wait_until


def test_a_turn_streams_live_in_order(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    with dash.stream(sid) as stream:
        hello = stream.wait_event("hello")
        assert hello.id is None
        assert hello.data["session_id"] == sid
        assert hello.data["live"] is True
        assert hello.data["after"] == hello.data["last_seq"]
        dash.submit(sid, "use a tool")
        stream.wait_event("turn_ended")
        events = stream.events()
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(hello.data["after"] + 1, hello.data["after"] + 1 + len(seqs)))
    assert [m.id for m in stream.messages if m.id is not None] == seqs
    for m in stream.messages:
        if m.id is not None:
            assert m.event == m.data["type"]
    types = [e["type"] for e in events]
    assert types[0] == "user_message"
    assert "tool_call_started" in types
    assert "tool_output_delta" in types
    assert "text_delta" in types
    assert types[-1] == "turn_ended"
    assert events == dash.history(sid)  # the stream is the display history, live


def test_last_event_id_replays_what_was_missed(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    dash.wait_ended(dash.submit(sid, "say hello")["operation_id"])
    stored = dash.history(sid)
    middle = stored[len(stored) // 2]["seq"]
    with dash.stream(sid, last_event_id=middle) as stream:
        assert stream.wait_event("hello").data["after"] == middle
        dash.wait_ended(dash.submit(sid, "say hello again")["operation_id"])
        stream.wait_for(
            lambda m: m.event == "turn_ended" and m.data["seq"] > stored[-1]["seq"], "the end"
        )
        seqs = [e["seq"] for e in stream.events()]
    everything = dash.history(sid)
    assert seqs == [e["seq"] for e in everything if e["seq"] > middle]


def test_a_bad_last_event_id_is_400(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    r = dash.client.get(f"/api/sessions/{sid}/events", headers={"Last-Event-ID": "x1"})
    assert r.status_code == 400
    assert r.json()["error"]["details"]["parameter"] == "Last-Event-ID"


def test_a_stored_session_streams_once_it_is_opened_again(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    dash.wait_ended(dash.submit(sid, "say hello")["operation_id"])
    # No front end is on it: it is closed once idle (as in a host).

    def closed() -> bool:
        return dash.ok("GET", f"/api/sessions/{sid}")["live"] is False

    wait_until(closed, "the session to close with no front end on it")
    with dash.stream(sid, last_event_id=0) as stream:
        assert stream.wait_event("hello").data["live"] is False
        stream.wait_event("turn_ended")  # the stored history first
        # Opening it for a turn that stays live (a tool that sleeps): the stream goes on live.
        receipt = dash.submit(sid, "sleep a while")
        stream.wait_for(lambda m: m.event == "state" and m.data["live"], "state: live")
        stream.wait_event("tool_call_started")
        dash.ok("POST", f"/api/operations/{receipt['operation_id']}/cancel", 202)
        assert stream.wait_event("turn_ended").data["outcome"] == "cancelled"
        seqs = [e["seq"] for e in stream.events()]
    assert seqs == list(range(1, len(seqs) + 1))
    assert seqs[-1] == dash.history(sid)[-1]["seq"]


def test_a_session_live_for_less_than_a_poll_still_reaches_the_stream(
    dash: Dashboard, work: Path
) -> None:
    sid = dash.new_session(work)["id"]
    dash.wait_ended(dash.submit(sid, "say hello")["operation_id"])

    def closed() -> bool:
        return dash.ok("GET", f"/api/sessions/{sid}")["live"] is False

    wait_until(closed, "the session to close with no front end on it")
    with dash.stream(sid) as stream:
        after = stream.wait_event("hello").data["after"]
        # A quick turn: the session may open, run and close between two looks.
        dash.wait_ended(dash.submit(sid, "say hello again")["operation_id"])
        stream.wait_event("turn_ended")
        seqs = [e["seq"] for e in stream.events()]
    assert seqs == list(range(after + 1, after + 1 + len(seqs)))
    assert seqs[-1] == dash.history(sid)[-1]["seq"]


def test_a_permission_request_is_answered_from_the_page_first_answer_wins(
    dash: Dashboard, work: Path
) -> None:
    sid = dash.new_session(work)["id"]
    dash.ok("POST", f"/api/sessions/{sid}/mode", json={"mode": "default"})
    with dash.stream(sid) as stream:
        stream.wait_event("hello")
        receipt = dash.submit(sid, "use a tool")
        asked = stream.wait_event("permission_requested").data
        detail = dash.ok("GET", f"/api/sessions/{sid}")
        assert [p["request_id"] for p in detail["pending_permissions"]] == [asked["request_id"]]
        path = f"/api/sessions/{sid}/permissions/{asked['request_id']}"
        assert dash.ok("POST", path, json={"decision": "allow_once"}) == {
            "request_id": asked["request_id"],
            "decision": "allow_once",
        }
        late = dash.client.post(path, json={"decision": "deny"})
        assert late.status_code == 409
        assert late.json()["error"]["code"] == "already_answered"
        assert late.json()["error"]["details"]["decision"] == "allow_once"
        answered = stream.wait_event("permission_answered").data
        assert answered["decision"] == "allow_once"
        finished = stream.wait_event("tool_call_finished").data
        assert finished["status"] == "ok"
        assert "tool-output" in finished["content"]
    assert dash.wait_ended(receipt["operation_id"])["outcome"] == "completed"
    unknown = dash.client.post(
        f"/api/sessions/{sid}/permissions/nope", json={"decision": "allow_once"}
    )
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "unknown_permission_request"


def test_a_deleted_session_ends_its_stream(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    with dash.stream(sid) as stream:
        stream.wait_event("hello")
        dash.ok("DELETE", f"/api/sessions/{sid}", 204)
        assert stream.wait_event("deleted").data == {"session_id": sid}


def test_delete_is_refused_while_a_turn_runs(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    dash.ok("POST", f"/api/sessions/{sid}/mode", json={"mode": "default"})
    with dash.stream(sid) as stream:
        receipt = dash.submit(sid, "use a tool")
        stream.wait_event("permission_requested")
        r = dash.client.delete(f"/api/sessions/{sid}")
        assert r.status_code == 409
        assert r.json()["error"]["code"] == "session_in_use"
        dash.ok("POST", f"/api/operations/{receipt['operation_id']}/cancel", 202,
                json={"reason": str(uuid.uuid4())})  # fmt: skip
        assert dash.wait_ended(receipt["operation_id"])["outcome"] == "cancelled"
