"""The host's protocol over its real socket: a plain ACP client, the `_rawtrio/*` methods
end to end, two connections on one live session, and a host killed mid-turn."""

from __future__ import annotations

import json
import time
from typing import Any

from rawtrio.store.codec import event_from_json
from tests.headless.support import LIVENESS_S
from tests.host.support import Client, HostProcess, Place


def _client(place: Place) -> Client:
    client = Client.connect(place.paths.socket)
    client.initialize()
    return client


def _seqs(events: list[dict[str, Any]]) -> list[int]:
    return [int(e["seq"]) for e in events]


def test_a_plain_acp_client_works_unchanged(place: Place, host: HostProcess) -> None:
    client = Client.connect(place.paths.socket)
    init = client.initialize()
    assert init["agentInfo"]["name"] == "rawtrio"
    assert init["_meta"]["rawtrio"]["pid"] == host.proc.pid
    assert init["_meta"]["rawtrio"]["protocol"] == 1
    sid = client.result("session/new", {"cwd": str(place.iso.cwd), "mcpServers": []})["sessionId"]
    answer = client.result(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "say hi"}]}
    )
    assert answer == {"stopReason": "end_turn"}
    chunks = [
        n["params"]["update"]["content"]["text"]
        for n in client.notifications
        if n["method"] == "session/update"
        and n["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "".join(chunks) == "Hello from the fake model."
    client.close()


def test_start_submit_events_usage(place: Place, host: HostProcess) -> None:
    client = _client(place)
    started = client.start(place, flags={"base_url": place.base_url, "max_steps": 5})
    assert started["agent"] == "default"
    assert started["running"] is None
    sid = started["sessionId"]
    turn = client.result("_rawtrio/session/submit", {"sessionId": sid, "text": "use a tool"})
    ended = client.wait_event("turn_ended")
    assert ended["outcome"] == "completed"
    assert ended["turn_id"] == turn["turnId"]
    events = client.events
    assert _seqs(events) == list(range(1, len(events) + 1))  # every event, no gap, in order
    types = [e["type"] for e in events]
    for expected in ("user_message", "tool_call_started", "tool_output_delta", "turn_ended"):
        assert expected in types
    finished = next(e for e in events if e["type"] == "tool_call_finished")
    assert finished["status"] == "ok"
    for e in events:  # full fidelity: the stream-json form reads back into the event
        back = event_from_json(e)
        assert back is not None
        assert back.seq == e["seq"]
    usage = client.result("_rawtrio/session/usage", {"sessionId": sid})
    assert set(usage) == {"cost_usd", "context_tokens", "context_window"}
    assert usage["context_tokens"] > 0

    unknown = client.call("_rawtrio/session/submit", {"sessionId": "nope", "text": "x"})
    assert unknown["error"]["code"] == -32002
    assert "not live in this host" in unknown["error"]["message"]
    assert unknown["error"]["data"] == {"reason": "not_live"}  # not a turn running
    client.close()


def test_the_sdk_variables_of_a_session_are_its_clients_never_the_hosts(place: Place) -> None:
    """The host's own ANTHROPIC_BASE_URL points nowhere and it holds a bearer token: an
    attached client's session reaches the endpoint of the client's ANTHROPIC_BASE_URL."""
    nowhere = "http://127.0.0.1:9"  # the discard port: nothing listens
    host = HostProcess.start(
        place,
        "--idle-exit",
        "0",
        env={"ANTHROPIC_BASE_URL": nowhere, "ANTHROPIC_AUTH_TOKEN": "host-token"},
    )
    try:
        host.wait_registered()
        client = _client(place)
        env = {**place.client_env(), "ANTHROPIC_BASE_URL": place.base_url}
        sid = client.start(place, env=env, flags={"max_steps": 2})["sessionId"]
        client.result("_rawtrio/session/submit", {"sessionId": sid, "text": "say hi"})
        ended = client.wait_event("turn_ended")
        assert ended["outcome"] == "completed", ended
        assert ended["final_text"] == "Hello from the fake model."
        client.close()
    finally:
        host.kill()


def test_bad_start_params_name_the_key_and_errors_carry_the_exit_code(
    place: Place, host: HostProcess
) -> None:
    client = _client(place)
    base = {"cwd": str(place.iso.cwd), "env": place.client_env(), "headless": True}
    bad = client.call("_rawtrio/session/start", {**base, "flags": {"max_steps": "many"}})
    assert bad["error"]["code"] == -32602
    assert "flags.max_steps" in bad["error"]["message"]
    unknown = client.call("_rawtrio/session/start", {**base, "flags": {"colour": True}})
    assert "flags.colour: unknown flag" in unknown["error"]["message"]
    env = client.call("_rawtrio/session/start", {**base, "env": {"SECRET": 1}})
    assert "env.SECRET" in env["error"]["message"]
    no_key = client.call(
        "_rawtrio/session/start", {**base, "env": {}, "flags": {"base_url": place.base_url}}
    )
    assert no_key["error"]["code"] == -32000
    assert no_key["error"]["data"] == {"kind": "NoCredentials", "exit_code": 4}
    missing = client.call(
        "_rawtrio/session/start",
        {**base, "flags": {"base_url": place.base_url}, "choice": {"resume": "ffffffffff"}},
    )
    assert missing["error"]["data"] == {"kind": "UnknownSession", "exit_code": 2}
    assert client.call("_rawtrio/nothing", {})["error"]["code"] == -32601
    client.close()


def test_two_connections_on_one_session_cancel_from_the_other(
    place: Place, host: HostProcess
) -> None:
    first = _client(place)
    flags = {"base_url": place.base_url}
    sid = first.start(place, flags=flags)["sessionId"]
    first.result("_rawtrio/session/submit", {"sessionId": sid, "text": "hello"})
    first.wait_event("turn_ended")

    second = _client(place)
    joined = second.start(place, flags=flags, choice={"resume": sid})
    assert joined["sessionId"] == sid  # joined, not SessionLocked
    first.result("_rawtrio/session/submit", {"sessionId": sid, "text": "sleep a while"})
    second.wait_event("tool_call_started")
    busy = second.call("_rawtrio/session/submit", {"sessionId": sid, "text": "me too"})
    assert busy["error"]["code"] == -32002  # one turn at a time, whoever submits
    assert busy["error"]["data"] == {"reason": "turn_running"}  # the session is live
    # A third joins mid-turn and asks for everything after seq 0: history, then live.
    third = _client(place)
    assert third.start(place, flags=flags, choice={"resume": sid}, since=0)["running"]
    second.notify("_rawtrio/session/cancel", {"sessionId": sid, "reason": "received SIGINT"})
    for client in (first, second, third):
        last = client.wait_until(
            lambda e: e["type"] == "turn_ended" and e["outcome"] != "completed"
        )
        assert last["outcome"] == "cancelled"
        assert last["reason"] == "received SIGINT"
    call = next(e for e in third.events if e["type"] == "tool_call_finished")
    assert call["status"] == "cancelled"
    assert call["started"] is True
    assert _seqs(third.events) == list(range(1, len(third.events) + 1))  # no gap, no duplicate
    assert _seqs(second.events) == sorted(set(_seqs(second.events)))
    status = json.loads(place.rawtrio("serve", "--status").stdout)["status"]
    assert [s["id"] for s in status["sessions"]] == [sid]
    assert status["sessions"][0]["clients"] == 3
    for client in (first, second, third):
        client.close()


def test_host_killed_mid_turn_the_session_recovers_with_nothing_rerun(
    place: Place, host: HostProcess
) -> None:
    client = _client(place)
    sid = client.start(place, flags={"base_url": place.base_url})["sessionId"]
    client.result("_rawtrio/session/submit", {"sessionId": sid, "text": "sleep a while"})
    client.wait_event("tool_call_started")
    host.kill()  # SIGKILL mid-turn
    client.wait_closed()  # the connection ends with the host
    client.close()

    run = place.rawtrio(
        "-p",
        "say hi",
        "--resume",
        sid,
        "--base-url",
        place.base_url,
        "--output-format",
        "events",
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1])["type"] == "turn_ended"

    again = HostProcess.start(place, "--idle-exit", "0")
    try:
        again.wait_registered()
        reader = _client(place)
        reader.start(place, flags={"base_url": place.base_url}, choice={"resume": sid}, since=0)
        reader.wait_until(lambda e: e["type"] == "turn_ended" and e["outcome"] == "completed")
        history = reader.events
        started = [e for e in history if e["type"] == "tool_call_started"]
        assert len(started) == 1  # the cut `sleep 30` was never run again
        outcomes = [e["outcome"] for e in history if e["type"] == "turn_ended"]
        assert outcomes == ["interrupted", "completed"]
        cut = [e for e in history if e["type"] == "tool_call_finished"]
        assert [e["status"] for e in cut] == ["outcome_unknown"]
        reader.close()
    finally:
        again.kill()


def test_a_leaving_connection_never_cancels_and_an_unattended_idle_session_closes(
    place: Place, host: HostProcess
) -> None:
    flags = {"base_url": place.base_url}
    first = _client(place)
    sid = first.start(place, flags=flags)["sessionId"]
    first.result("_rawtrio/session/submit", {"sessionId": sid, "text": "sleep a while"})
    first.wait_event("tool_call_started")
    first.close()

    second = _client(place)
    joined = second.start(place, flags=flags, choice={"resume": sid})
    assert joined["running"] is not None  # the turn went on without its client
    second.notify("_rawtrio/session/cancel", {"sessionId": sid, "reason": "done here"})
    assert second.wait_event("turn_ended")["outcome"] == "cancelled"
    second.close()

    def live_sessions() -> list[Any]:
        shown = json.loads(place.rawtrio("serve", "--status").stdout)
        return list(shown["status"]["sessions"])

    deadline = time.monotonic() + LIVENESS_S
    while live_sessions() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_sessions() == []  # closed once idle with no client left
    # … and opened again on the next start, its history intact.
    third = _client(place)
    third.start(place, flags=flags, choice={"resume": sid}, since=0)
    assert third.wait_event("turn_ended")["outcome"] == "cancelled"
    third.close()


def test_a_bad_tool_rules_entry_is_invalid_params_naming_it(
    place: Place, host: HostProcess
) -> None:
    """`flags.tool_rules` entries are checked on the wire, in `_rawtrio/session/start` and
    in an ACP `session/new`'s `_meta.rawtrio`: -32602 naming the entry, no session made."""
    client = _client(place)
    base = {"cwd": str(place.iso.cwd), "env": place.client_env(), "headless": True}
    good = {"pattern": "Read", "effect": "allow"}
    for entry, why in (
        ({"effect": "allow"}, 'needs "pattern"'),
        ({}, 'needs "pattern"'),
        ("Read", "must be an object, got a string"),
        ({"match": "bash"}, "effect must be allow, ask or deny, got None"),
        ({"match": "bash", "effect": "deny", "when": {"path": "command"}}, "when must be"),
        ({"match": "bash", "effect": "deny", "when": {"path": "x", "regex": "("}}, "when.regex"),
        ({"match": "bash", "effect": "deny", "why": 1}, "unknown key 'why'"),
        ({"pattern": "Read", "effect": "ask"}, "'ask': a tool list allows or denies"),
    ):
        flags = {"base_url": place.base_url, "tool_rules": [good, entry]}
        bad = client.call("_rawtrio/session/start", {**base, "flags": flags})
        assert bad["error"]["code"] == -32602, bad
        assert f"flags.tool_rules[1]: {why}" in bad["error"]["message"], bad
        meta = {"rawtrio": {"env": place.client_env(), "flags": flags}}
        params = {"cwd": str(place.iso.cwd), "mcpServers": [], "_meta": meta}
        acp = client.call("session/new", params)
        assert acp["error"]["code"] == -32602, acp
        assert f"_meta.rawtrio.flags.tool_rules[1]: {why}" in acp["error"]["message"], acp
    assert client.result("_rawtrio/sessions/list", {"cwd": None})["sessions"] == []
    client.close()
