"""`_rawtrio/rewind` over real JSON-RPC: a session of three turns run in a real host
(`rawtrio serve`, the fake model server), then rewound by an editor speaking to `rawtrio
acp` on its stdio (attached to that host): a conflict applies nothing, `force` rewinds,
the fork holds the conversation before the prompt and the source is left as it was."""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.errors import SessionLocked
from rawtrio.store.lease import Leases
from tests.checkpoints.helpers import picture
from tests.checkpoints.rewind_support import PROMPTS, make_small_project, scenario_three_turns
from tests.headless.support import LIVENESS_S
from tests.host.conftest import base_url, host, model, place
from tests.host.support import Client, HostProcess, Place
from tests.host.test_attach_acp import Editor

__all__ = ["base_url", "host", "model", "place"]  # the host fixtures, with this SCENARIO
SCENARIO = scenario_three_turns()
SCENARIO["rules"].insert(
    0,
    {
        "match": "sleep a while",
        "replies": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
            {"text": "slept"},
        ],
    },
)


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


def test_shell_undo_redo_and_rewind_of_a_session_live_in_the_host_go_through_it(
    place: Place, host: HostProcess
) -> None:
    """Live in the host (which holds its lease), the shell's `rawtrio undo`, `redo` and
    `rewind` are done by the host: the output and exit codes of a local run, the files
    restored, the conversation as it was; a turn running there is the host's refusal."""
    project = make_small_project(place.iso.cwd)
    client = Client.connect(place.paths.socket)
    client.initialize()
    sid = client.start(place, flags={"base_url": place.base_url})["sessionId"]
    pictures = []
    for text in PROMPTS:
        pictures.append(picture(project))
        run_turn(client, sid, text)
    after = picture(project)
    before = exported(place, sid)
    sets = CheckpointStore(place.state / "checkpoints", project)

    undone = place.rawtrio("undo")
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.startswith(f"undo checkpoint 3 of session {sid[:8]}"), undone.stdout
    assert picture(project) == pictures[2]
    assert [c.state for c in sets.change_sets(sid)] == ["applied", "applied", "undone"]
    assert exported(place, sid)["context"] == before["context"]  # as after /undo
    redone = place.rawtrio("redo")
    assert redone.returncode == 0, redone.stderr
    assert picture(project) == after

    (project / "a.txt").write_text("changed outside\n")  # since turn 3
    outside = picture(project)
    conflict = place.rawtrio("undo", "--session", sid[:8], "--turn", "3")
    assert conflict.returncode == 6, conflict.stderr
    assert "a.txt" in conflict.stderr
    assert conflict.stdout == ""
    assert picture(project) == outside  # nothing written
    forced = place.rawtrio("undo", "--session", sid[:8], "--turn", "3", "--force")
    assert forced.returncode == 0, forced.stderr
    assert picture(project) == pictures[2]

    turn_id = client.result("_rawtrio/session/submit", {"sessionId": sid, "text": "sleep a while"})[
        "turnId"
    ]
    client.wait_until(lambda e: e["type"] == "tool_call_started" and e["turn_id"] == turn_id)
    for args in (("redo",), ("rewind", "--to", "1")):
        busy = place.rawtrio(*args)
        assert busy.returncode == 5, (args, busy.stderr)
        assert "a turn is running; cancel it first to" in busy.stderr
    assert picture(project) == pictures[2]
    client.notify("_rawtrio/session/cancel", {"sessionId": sid})
    client.wait_until(lambda e: e["type"] == "turn_ended" and e["turn_id"] == turn_id)

    rewound = place.rawtrio("rewind", "--to", "2")
    assert rewound.returncode == 0, rewound.stderr
    fork = rewound.stdout.strip()
    assert fork
    assert fork != sid
    assert rewound.stderr.startswith("rewound to prompt 2: conversation forked as"), rewound.stderr
    assert picture(project) == pictures[1]
    assert user_texts(exported(place, fork)) == ["first change"]
    missing = place.rawtrio("rewind", "--session", sid, "--to", "9")
    assert missing.returncode == 2, missing.stderr
    assert "no prompt 9: the session has prompts 1 to" in missing.stderr
    client.close()


def run_turn(client: Client, sid: str, text: str) -> None:
    turn_id = client.result("_rawtrio/session/submit", {"sessionId": sid, "text": text})["turnId"]
    ended = client.wait_until(lambda e: e["type"] == "turn_ended" and e["turn_id"] == turn_id)
    assert ended["outcome"] == "completed", ended


def test_the_hosts_rewind_never_changes_a_session_open_in_another_process(
    place: Place, host: HostProcess
) -> None:
    """Held by another process, the host's own `_rawtrio/rewind` is refused (exit code 5)."""
    project = make_small_project(place.iso.cwd)
    client = Client.connect(place.paths.socket)
    client.initialize()
    sid = client.start(place, flags={"base_url": place.base_url})["sessionId"]
    run_turn(client, sid, PROMPTS[0])
    after = picture(project)
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


#: Imported by a sitecustomize (through PYTHONPATH) in the host only: every session it
#: opens has checkpoints off (`SessionOptions.checkpoint_dir = None`, as an embedder of the
#: runtime may choose): its turns capture nothing.
CHECKPOINTS_OFF = """\
import dataclasses
import rawtrio.app.application as application
_prepare = application.prepare_session
async def _off(*args, **kwargs):
    setup = await _prepare(*args, **kwargs)
    options = dataclasses.replace(setup.options, checkpoint_dir=None)
    return dataclasses.replace(setup, options=options)
application.prepare_session = _off
"""


def test_a_host_session_with_checkpoints_off_undoes_from_the_store_as_the_shell_does(
    place: Place,
) -> None:
    """Checkpoints off for a session stop its turns capturing; the checkpoints its earlier
    runs recorded stay undoable (docs/checkpoints.md, "Who may undo"). The shell's `rawtrio
    undo`, `redo` and `rewind --files` of such a session live in a real host answer what
    they answer run locally once the host lets the session go."""
    project = make_small_project(place.iso.cwd)
    pictures = []
    sid = ""
    for text in PROMPTS:  # recorded by local runs, checkpoints on
        pictures.append(picture(project))
        resume = ("--resume", sid) if sid else ()
        done = place.rawtrio("-p", text, *resume, "--no-attach", "--output-format", "json")
        assert done.returncode == 0, done.stderr
        sid = json.loads(done.stdout)["session_id"]
    after = picture(project)
    hook = place.iso.root / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(CHECKPOINTS_OFF)
    path = os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])
    host = HostProcess.start(place, "--idle-exit", "0", env={"PYTHONPATH": path})
    client: Client | None = None
    try:
        host.wait_registered()
        client = Client.connect(place.paths.socket)
        client.initialize()
        client.start(place, choice={"resume": sid}, flags={"base_url": place.base_url})
        run_turn(client, sid, "say nothing")  # the session works in the host
        sets = CheckpointStore(place.state / "checkpoints", project)
        assert len(sets.change_sets(sid)) == 3

        undone = place.rawtrio("undo")
        assert undone.returncode == 0, undone.stderr
        assert undone.stdout.startswith(f"undo checkpoint 3 of session {sid[:8]}"), undone.stdout
        assert picture(project) == pictures[2]
        redone = place.rawtrio("redo", "--session", sid[:8])
        assert redone.returncode == 0, redone.stderr
        assert picture(project) == after
        rewound = place.rawtrio("rewind", "--to", "2", "--files")
        assert rewound.returncode == 0, rewound.stderr
        assert picture(project) == pictures[1]
        in_host = (undone.stdout, redone.stdout)
        assert place.rawtrio("redo").returncode == 0
        assert place.rawtrio("redo").returncode == 0
        assert picture(project) == after
        client.close()  # the host closes the idle session once no front end is left on it
        deadline = time.monotonic() + LIVENESS_S
        while sid in {s["id"] for s in _host_sessions(place)}:
            assert time.monotonic() < deadline, "the host never let the session go"
            time.sleep(0.05)
        local = (place.rawtrio("undo").stdout, place.rawtrio("redo", "--session", sid[:8]).stdout)
        assert local == in_host
        assert picture(project) == after
    finally:
        if client is not None:
            client.close()  # again after a failure: a socket left open fails a later test
        host.proc.send_signal(signal.SIGTERM)
        host.wait_exit()


def _host_sessions(place: Place) -> list[dict[str, Any]]:
    client = Client.connect(place.paths.socket)
    try:
        client.initialize()
        sessions: list[dict[str, Any]] = client.result("_rawtrio/host/status", {})["sessions"]
        return sessions
    finally:
        client.close()
