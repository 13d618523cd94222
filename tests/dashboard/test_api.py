"""Every endpoint of the dashboard's API over a real socket, against `rawtrio dashboard`
and the fake model: what each answers, and the errors it gives."""

from __future__ import annotations

import os
from pathlib import Path

from tests.dashboard.support import Dashboard


def test_bootstrap_says_what_the_page_needs(dash: Dashboard, work: Path) -> None:
    boot = dash.ok("GET", "/api/bootstrap")
    assert boot["api_version"] == 1
    assert boot["mode"] == "standalone"
    assert boot["pid"] == dash.proc.pid if dash.proc else True
    assert Path(boot["default_cwd"]).is_absolute()
    assert boot["limits"]["page_max"] == 100
    assert boot["modes"] == ["default", "accept-edits", "plan", "bypass"]
    assert boot["permission_options"] == ["allow_once", "allow_always", "deny"]


def test_a_created_session_is_live_and_can_be_read(dash: Dashboard, work: Path) -> None:
    r = dash.client.post("/api/sessions", json={"cwd": str(work), "title": "first"})
    assert r.status_code == 201, r.text
    created = r.json()
    assert r.headers["location"] == f"/api/sessions/{created['id']}"
    assert created["title"] == "first"
    assert created["cwd"] == str(work)
    assert created["live"] is True
    assert created["running"] is None
    assert created["mode"] in ("default", "accept-edits", "plan", "bypass")
    assert created["pending_permissions"] == []
    got = dash.ok("GET", f"/api/sessions/{created['id']}")
    assert got["id"] == created["id"]


def test_rename_shows_in_the_list(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    renamed = dash.ok("PATCH", f"/api/sessions/{sid}", json={"title": "renamed here"})
    assert renamed["title"] == "renamed here"
    listed = dash.ok("GET", "/api/sessions", params={"cwd": str(work)})
    assert [s["title"] for s in listed["sessions"]] == ["renamed here"]


def test_sessions_are_paged_with_keyset_cursors(dash: Dashboard, work: Path) -> None:
    ids = [dash.new_session(work)["id"] for _ in range(5)]
    first = dash.ok("GET", "/api/sessions", params={"cwd": str(work), "limit": 2})
    assert len(first["sessions"]) == 2
    assert first["next_cursor"]
    # A session created between two pages comes before the first: no repeat, no skip.
    ids.append(dash.new_session(work)["id"])
    seen = [s["id"] for s in first["sessions"]]
    cursor = first["next_cursor"]
    while cursor:
        page = dash.ok(
            "GET", "/api/sessions", params={"cwd": str(work), "limit": 2, "cursor": cursor}
        )
        seen += [s["id"] for s in page["sessions"]]
        cursor = page["next_cursor"]
    assert sorted(seen) == sorted(ids[:5])
    assert len(seen) == len(set(seen))


def test_bad_paging_parameters_are_400_naming_the_parameter(dash: Dashboard) -> None:
    for params, name in (
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cwd": "relative/dir"}, "cwd"),
    ):
        r = dash.client.get("/api/sessions", params=params)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["details"]["parameter"] == name
    r = dash.client.get("/api/sessions", params={"cursor": "not-a-cursor"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_cursor"


def test_search_finds_a_session_by_its_history_and_by_its_title(
    dash: Dashboard, work: Path
) -> None:
    talked = dash.new_session(work)["id"]
    dash.wait_ended(dash.submit(talked, "please say zanzibar")["operation_id"])
    titled = dash.new_session(work, title="zanzibar notes")["id"]
    found = dash.ok("GET", "/api/sessions", params={"q": "zanzibar"})["sessions"]
    assert [s["id"] for s in found][:2] == [talked, titled]
    assert "[zanzibar]" in found[0]["match"]["snippet"]
    assert found[1]["match"] is None


def test_history_pages_newest_or_oldest_first(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    dash.wait_ended(dash.submit(sid, "say hello")["operation_id"])
    dash.wait_ended(dash.submit(sid, "say hello again")["operation_id"])
    everything = dash.history(sid)
    seqs = [e["seq"] for e in everything]
    assert seqs == list(range(1, len(seqs) + 1))
    newest = dash.ok("GET", f"/api/sessions/{sid}/history", params={"limit": 3})
    assert [e["seq"] for e in newest["events"]] == seqs[::-1][:3]
    assert newest["last_seq"] == seqs[-1]
    older = dash.ok(
        "GET",
        f"/api/sessions/{sid}/history",
        params={"limit": 3, "cursor": newest["next_cursor"]},
    )
    assert [e["seq"] for e in older["events"]] == seqs[::-1][3:6]
    assert everything[0]["type"] == "user_message"
    assert everything[-1]["type"] == "turn_ended"


def test_usage_is_the_sessions_totals(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    dash.wait_ended(dash.submit(sid, "say hello")["operation_id"])
    usage = dash.ok("GET", f"/api/sessions/{sid}/usage")
    assert usage["session_id"] == sid
    assert usage["usage"]["output_tokens"] > 0
    assert set(usage["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "context_tokens",
        "context_window",
    }


def test_delete_removes_the_session(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    r = dash.client.delete(f"/api/sessions/{sid}")
    assert r.status_code == 204
    assert r.content == b""
    for method, path in (
        ("GET", f"/api/sessions/{sid}"),
        ("GET", f"/api/sessions/{sid}/history"),
        ("GET", f"/api/sessions/{sid}/usage"),
        ("DELETE", f"/api/sessions/{sid}"),
        ("PATCH", f"/api/sessions/{sid}"),
    ):
        r = dash.client.request(method, path, json={"title": "x"} if method == "PATCH" else None)
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["error"]["code"] == "unknown_session"


def test_mode_and_model_switches(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    assert dash.ok("POST", f"/api/sessions/{sid}/mode", json={"mode": "plan"})["mode"] == "plan"
    r = dash.client.post(f"/api/sessions/{sid}/mode", json={"mode": "yolo"})
    assert r.status_code == 422
    r = dash.client.post(f"/api/sessions/{sid}/model", json={"model": "no-such-model"})
    assert r.status_code == 422, r.text
    assert "no-such-model" in r.json()["error"]["message"]


def test_a_new_session_in_a_missing_folder_is_422(dash: Dashboard, work: Path) -> None:
    for cwd in (str(work / "missing"), "relative"):
        r = dash.client.post("/api/sessions", json={"cwd": cwd})
        assert r.status_code == 422, r.text
        assert r.json()["error"]["details"]["errors"][0]["loc"] == ["body", "cwd"]
    assert os.path.isdir(work)
