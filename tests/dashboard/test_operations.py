"""Turns and compactions submitted with a client request id: 202 and a receipt, the first
receipt again for a repeat, 409 for a reused id or a busy session, and cancel — strict:
a running tool's process is gone when the turn has ended."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import httpx2
import psutil

from rawtrio.testing.fake_model import FakeModelServer
from tests.dashboard.support import Dashboard
from tests.headless.support import Isolation, wait_until


def session_processes(session_id: str) -> list[psutil.Process]:
    """Processes started for the session (they carry RAWTRIO_SESSION=<id>)."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("RAWTRIO_SESSION") == session_id and p.status() != "zombie":
                found.append(p)
        except psutil.Error:
            pass
    return found


def test_a_turn_is_accepted_with_a_receipt_and_ends(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    rid = str(uuid.uuid4())
    r = dash.client.post(f"/api/sessions/{sid}/turns", json={"client_request_id": rid,
                                                             "text": "say hello"})  # fmt: skip
    assert r.status_code == 202, r.text
    receipt = r.json()
    assert r.headers["location"] == f"/api/operations/{receipt['operation_id']}"
    assert receipt["client_request_id"] == rid
    assert receipt["kind"] == "turn"
    assert receipt["session_id"] == sid
    assert receipt["turn_id"]
    ended = dash.wait_ended(receipt["operation_id"])
    assert ended["outcome"] == "completed"
    assert ended["turn_id"] == receipt["turn_id"]
    types = [e["type"] for e in dash.history(sid)]
    assert types.count("user_message") == 1
    assert types[-1] == "turn_ended"


def test_the_same_request_id_and_input_gives_the_first_receipt(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    body = {"client_request_id": str(uuid.uuid4()), "text": "say hello"}
    first = dash.ok("POST", f"/api/sessions/{sid}/turns", 202, json=body)
    dash.wait_ended(first["operation_id"])
    again = dash.ok("POST", f"/api/sessions/{sid}/turns", 200, json=body)
    assert again["operation_id"] == first["operation_id"]
    assert again["turn_id"] == first["turn_id"]
    assert again["status"] == "ended"
    assert [e["type"] for e in dash.history(sid)].count("user_message") == 1


def test_a_reused_request_id_with_other_input_is_409(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    other = dash.new_session(work)["id"]
    rid = str(uuid.uuid4())
    first = dash.submit(sid, "say hello", rid)
    dash.wait_ended(first["operation_id"])
    for path, body in (
        (f"/api/sessions/{sid}/turns", {"client_request_id": rid, "text": "something else"}),
        (f"/api/sessions/{other}/turns", {"client_request_id": rid, "text": "say hello"}),
        (f"/api/sessions/{sid}/compact", {"client_request_id": rid}),
    ):
        r = dash.client.post(path, json=body)
        assert r.status_code == 409, r.text
        assert r.json()["error"]["code"] == "request_id_reused"
        assert r.json()["error"]["details"]["operation_id"] == first["operation_id"]


def test_copies_racing_each_other_start_one_turn(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    body = {"client_request_id": str(uuid.uuid4()), "text": "say hello"}
    answers: list[httpx2.Response] = []

    def send() -> None:
        with httpx2.Client(base_url=dash.url, headers=dict(dash.client.headers)) as c:
            answers.append(c.post(f"/api/sessions/{sid}/turns", json=body))

    threads = [threading.Thread(target=send) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 202]
    assert len({a.json()["operation_id"] for a in answers}) == 1
    dash.wait_ended(answers[0].json()["operation_id"])
    assert [e["type"] for e in dash.history(sid)].count("user_message") == 1


def test_a_prompt_while_a_turn_runs_is_409_and_cancel_stops_the_tool(
    dash: Dashboard, work: Path
) -> None:
    sid = dash.new_session(work)["id"]
    receipt = dash.submit(sid, "sleep a while")
    wait_until(lambda: bool(session_processes(sid)), "the tool's sleep to start")
    r = dash.client.post(f"/api/sessions/{sid}/turns", json={
        "client_request_id": str(uuid.uuid4()), "text": "say hello"})  # fmt: skip
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "turn_in_progress"
    assert r.json()["error"]["details"]["running_turn"] == receipt["turn_id"]
    r = dash.client.post(f"/api/sessions/{sid}/compact", json={
        "client_request_id": str(uuid.uuid4())})  # fmt: skip
    assert r.status_code == 409
    op = receipt["operation_id"]
    cancelled = dash.ok("POST", f"/api/operations/{op}/cancel", 202, json={"reason": "stop it"})
    assert cancelled["cancel_requested"] is True
    ended = dash.wait_ended(op)
    assert ended["outcome"] == "cancelled"
    assert ended["reason"] == "stop it"
    assert session_processes(sid) == []  # the turn ended only after its tool was reaped
    finished = [e for e in dash.history(sid) if e["type"] == "tool_call_finished"]
    assert finished[-1]["status"] == "cancelled"
    assert finished[-1]["started"] is True
    again = dash.ok("POST", f"/api/operations/{op}/cancel", 200)  # ended: nothing to do
    assert again["status"] == "ended"


def test_cancel_the_session_stops_whatever_runs(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    receipt = dash.submit(sid, "sleep a while")
    wait_until(lambda: bool(session_processes(sid)), "the tool's sleep to start")
    assert dash.ok("POST", f"/api/sessions/{sid}/cancel") == {"cancelled": True}
    assert dash.wait_ended(receipt["operation_id"])["outcome"] == "cancelled"
    assert session_processes(sid) == []
    assert dash.ok("POST", f"/api/sessions/{sid}/cancel", json={}) == {"cancelled": False}


def test_compact_is_an_operation_too(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    dash.wait_ended(dash.submit(sid, "say hello")["operation_id"])
    body = {"client_request_id": str(uuid.uuid4()), "focus": "the greeting"}
    receipt = dash.ok("POST", f"/api/sessions/{sid}/compact", 202, json=body)
    assert receipt["kind"] == "compact"
    assert receipt["turn_id"] is None
    ended = dash.wait_ended(receipt["operation_id"])
    assert ended["outcome"] in ("compacted", "unchanged")
    assert (
        dash.ok("POST", f"/api/sessions/{sid}/compact", 200, json=body)["operation_id"]
        == (receipt["operation_id"])
    )
    types = [e["type"] for e in dash.history(sid)]
    assert "compaction_ended" in types


def test_a_request_id_sent_again_after_a_restart_starts_nothing(
    tmp_path: Path, model: FakeModelServer
) -> None:
    iso = Isolation(tmp_path)
    body = {"client_request_id": str(uuid.uuid4()), "text": "say hello"}
    first = Dashboard.start(iso, model.base_url)
    try:
        sid = first.new_session(iso.cwd)["id"]
        receipt = first.ok("POST", f"/api/sessions/{sid}/turns", 202, json=body)
        first.wait_ended(receipt["operation_id"])
    finally:
        assert first.stop() == 0
    second = Dashboard.start(iso, model.base_url)
    try:
        again = second.ok("POST", f"/api/sessions/{sid}/turns", 202, json=body)
        assert again["turn_id"] == receipt["turn_id"]
        ended = second.wait_ended(again["operation_id"])  # not left running for ever
        assert ended["outcome"] is None
        assert [e["type"] for e in second.history(sid)].count("user_message") == 1
    finally:
        assert second.stop() == 0
