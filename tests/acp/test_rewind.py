"""`_rawtrio/rewind` over real JSON-RPC: a session of three turns run in a real host
(`rawtrio serve`, the fake model server), then rewound by an editor speaking to `rawtrio
acp` on its stdio (attached to that host): a conflict applies nothing, `force` rewinds,
the fork holds the conversation before the prompt and the source is left as it was."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from rawtrio.errors import SessionLocked
from rawtrio.host.paths import read_registration
from rawtrio.store.lease import Leases
from tests.checkpoints.helpers import picture
from tests.checkpoints.rewind_support import PROMPTS, make_small_project, scenario_three_turns
from tests.headless.support import LIVENESS_S
from tests.host.conftest import base_url, host, model, place
from tests.host.support import Client, HostProcess, Place
from tests.host.test_attach_acp import Editor

__all__ = ["base_url", "host", "model", "place"]  # the host fixtures, with this SCENARIO
SCENARIO = scenario_three_turns()


def exported(place: Place, sid: str) -> dict[str, Any]:
    shown = place.rawtrio("sessions", "export", "--format", "json", sid)
    assert shown.returncode == 0, shown.stderr
    data: dict[str, Any] = json.loads(shown.stdout)
    return data


def user_texts(data: dict[str, Any]) -> list[str]:
    return [m["text"] for m in data["context"] if m["role"] == "user"]


def test_rewind_over_acp_with_a_conflict_then_forced(place: Place, host: HostProcess) -> None:
    project = make_small_project(place.iso.cwd)
    client = Client.connect(place.paths.socket)
    client.initialize()
    sid = client.start(place, flags={"base_url": place.base_url})["sessionId"]
    pictures = []
    turns = []
    for text in PROMPTS:
        pictures.append(picture(project))
        turn = client.result("_rawtrio/session/submit", {"sessionId": sid, "text": text})
        turn_id = turn["turnId"]
        turns.append(turn_id)

        def ended_turn(e: dict[str, Any], turn_id: str = turn_id) -> bool:
            return bool(e["type"] == "turn_ended" and e["turn_id"] == turn_id)

        ended = client.wait_until(ended_turn)
        assert ended["outcome"] == "completed", ended
    before = exported(place, sid)
    assert user_texts(before) == list(PROMPTS)

    editor = Editor.start(place)
    try:
        assert "result" in editor.initialize()
        bad = editor.call("_rawtrio/rewind", {"sessionId": sid, "prompt": 0})
        assert bad["error"]["code"] == -32602
        assert "prompt must be an integer >= 1" in bad["error"]["message"]
        bad = editor.call("_rawtrio/rewind", {"sessionId": sid, "prompt": 2, "restore": "all"})
        assert bad["error"]["code"] == -32602
        assert "restore must be one of both, conversation, files" in bad["error"]["message"]
        missing = editor.call("_rawtrio/rewind", {"sessionId": sid, "prompt": 9})
        assert "no prompt 9: the session has prompts 1 to 3" in missing["error"]["message"]

        (project / "run.sh").chmod(0o600)  # changed outside rawtrio since turn 2
        outside = picture(project)
        refused = editor.call("_rawtrio/rewind", {"sessionId": sid, "prompt": 2})
        result = refused["result"]
        assert result["applied"] is False
        assert result["sessionId"] is None
        assert [c["path"] for c in result["conflicts"]] == ["run.sh"]
        assert result["conflicts"][0]["found"] == "19 bytes, mode 600"
        assert result["restored"] == []
        assert picture(project) == outside  # nothing written
        listed = client.result("_rawtrio/sessions/list", {"cwd": None})["sessions"]
        assert [s["id"] for s in listed] == [sid]  # no fork either

        params = {"sessionId": sid, "prompt": 2, "restore": "both", "force": True}
        forced = editor.call("_rawtrio/rewind", params)["result"]
        assert forced["applied"] is True
        assert forced["prompt"] == 2
        assert forced["promptText"] == "second change"
        assert forced["restored"] == ["a.txt", "keep.txt", "new/dir/t.txt", "run.sh"]
        assert forced["text"].startswith("rewound to prompt 2: conversation forked as")
        fork = forced["sessionId"]
        assert isinstance(fork, str)
        assert fork != sid
        assert picture(project) == pictures[1]
        assert user_texts(exported(place, fork)) == ["first change"]
        assert exported(place, sid)["context"] == before["context"]  # the source as it was
        ids = {s["id"] for s in client.result("_rawtrio/sessions/list", {"cwd": None})["sessions"]}
        assert ids == {sid, fork}

        talk = editor.call(
            "_rawtrio/rewind", {"sessionId": sid, "prompt": 3, "restore": "conversation"}
        )["result"]
        assert talk["applied"] is True
        assert talk["restored"] == []
        assert user_texts(exported(place, talk["sessionId"])) == list(PROMPTS[:2])
        assert picture(project) == pictures[1]  # the files stay
        nothing = editor.call(
            "_rawtrio/rewind", {"sessionId": sid, "prompt": 3, "restore": "files"}
        )
        assert "no files to restore" in nothing["error"]["message"]

        # What an attached chat's /rewind forks with: `_rawtrio/sessions/fork` before a turn.
        params = {"sessionId": sid, "beforeTurn": turns[2], "title": "by hand"}
        copy = client.result("_rawtrio/sessions/fork", params)["sessionId"]
        assert user_texts(exported(place, copy)) == list(PROMPTS[:2])
        assert exported(place, copy)["session"]["title"] == "by hand"
        params = {"sessionId": sid, "beforeTurn": "no-such-turn"}
        unknown = client.call("_rawtrio/sessions/fork", params)
        assert "has no prompt of turn no-such-turn" in unknown["error"]["message"]
    finally:
        assert editor.finish() == 0
        client.close()


def test_undo_and_rewind_never_change_a_session_open_in_another_process(
    place: Place, host: HostProcess
) -> None:
    """Live in the host, the shell's `rawtrio undo` / `rewind` are refused naming the host;
    held by another process, the host's own `_rawtrio/rewind` is refused (exit code 5)."""
    project = make_small_project(place.iso.cwd)
    client = Client.connect(place.paths.socket)
    client.initialize()
    sid = client.start(place, flags={"base_url": place.base_url})["sessionId"]
    turn_id = client.result("_rawtrio/session/submit", {"sessionId": sid, "text": PROMPTS[0]})[
        "turnId"
    ]
    ended = client.wait_until(lambda e: e["type"] == "turn_ended" and e["turn_id"] == turn_id)
    assert ended["outcome"] == "completed", ended
    after = picture(project)
    registration = read_registration(place.paths.registration)
    assert registration is not None
    for args in (("undo",), ("rewind", "--session", sid, "--to", "1")):
        refused = place.rawtrio(*args)
        assert refused.returncode == 5, (args, refused.stderr)
        assert f"is open in another process (pid {registration.pid})" in refused.stderr
        assert "the rawtrio host (`rawtrio serve`)" in refused.stderr
    assert picture(project) == after

    client.close()  # the host closes the idle session once no front end is left on it
    leases = Leases(place.state / "sessions.db")
    deadline = time.monotonic() + LIVENESS_S
    while True:
        try:
            leases.acquire(sid)  # this process now has the session open
            break
        except SessionLocked:
            assert time.monotonic() < deadline, "the host never let the session go"
            time.sleep(0.05)
    try:
        other = Client.connect(place.paths.socket)
        other.initialize()
        try:
            refused_rpc = other.call("_rawtrio/rewind", {"sessionId": sid, "prompt": 1})
            error = refused_rpc["error"]
            assert (
                f"session {sid} is open in another process (pid {os.getpid()})"
                in (error["message"])
            )
            assert error["data"]["exit_code"] == 5
            listed = other.result("_rawtrio/sessions/list", {"cwd": None})["sessions"]
            assert [s["id"] for s in listed] == [sid]  # no fork
        finally:
            other.close()
    finally:
        leases.release(sid)
    assert picture(project) == after
