"""`rawtrio -p` attached to a host, against a scripted host (tests/host/fake_host.py): the
real program in a subprocess, a real Unix socket, the host's side played by the test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.host.paths import host_paths
from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation, LiveRun, run_rawtrio
from tests.host.fake_host import Peer, fake_host

KEYS = {"ANTHROPIC_API_KEY": "test-key"}


@pytest.fixture
def iso(tmp_path: Path) -> Isolation:
    return Isolation(tmp_path)


def env_for(state: Path, **extra: str) -> dict[str, str]:
    return {**KEYS, "RAWTRIO_STATE_DIR": str(state), "RAWTRIO_MARKER": "from-the-client", **extra}


def socket_of(iso: Isolation, state: Path) -> Path:
    return host_paths(state, iso.env(env_for(state))).socket


def model_flags(fake: FakeModel) -> list[str]:
    return ["--base-url", fake.base_url, "--model", "test-model"]


def play_a_turn(peer: Peer, *, text: str = "Hello from the host.") -> None:
    """The events of a turn that ran one tool call and answered `text`."""
    s, t = "s1", "t1"
    peer.event(ev.UserMessageCommitted(session_id=s, turn_id=t, seq=1, text="hi"))
    peer.event(ev.TextDelta(session_id=s, turn_id=t, seq=2, step=1, text="Let me look."))
    peer.event(
        ev.ToolCallFinished(
            session_id=s,
            turn_id=t,
            seq=3,
            call_id="c1",
            name="bash",
            status=ToolStatus.DENIED,
            content="",
            started=False,
        )
    )
    peer.event(ev.TextDelta(session_id=s, turn_id=t, seq=4, step=2, text=text))
    peer.event(ev.Notice(session_id=s, turn_id=t, seq=5, level="warning", text="careful"))
    peer.event(
        ev.Usage(
            session_id=s,
            turn_id=t,
            seq=6,
            step=2,
            input_tokens=10,
            output_tokens=5,
            cache_read_tokens=1,
            cache_write_tokens=2,
            cost_usd=0.25,
        )
    )
    # Another session's event on the same connection is not this run's.
    peer.event(ev.TextDelta(session_id="other", turn_id="t9", seq=1, step=1, text="NOT OURS"))
    peer.event(
        ev.TurnEnded(
            session_id=s,
            turn_id=t,
            seq=7,
            outcome=TurnOutcome.COMPLETED,
            reason="completed",
            steps=2,
            final_text=text,
        )
    )


def test_the_host_runs_the_turn_with_the_clients_directory_environment_and_flags(
    iso: Isolation, state: Path
) -> None:
    sub = iso.cwd / "sub"
    sub.mkdir(parents=True)
    (iso.cwd / "my.toml").write_text("")
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(
            iso,
            "-p",
            "hi",
            "--cwd",
            "sub",
            "--model",
            "m1",
            "--max-steps",
            "7",
            "--config",
            "my.toml",
            "--yes",
            "--resume",
            "abcd",
            env=env_for(state),
        )
        peer = host.accept()
        params = peer.start_turn()
        play_a_turn(peer)
        done = run.finish()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Let me look.\nHello from the host.\n"
    assert done.stderr == "rawtrio: bash: denied\nrawtrio: warning: careful\n"
    assert params["cwd"] == str(sub.resolve())
    assert params["env"]["RAWTRIO_MARKER"] == "from-the-client"
    assert params["env"]["ANTHROPIC_API_KEY"] == "test-key"
    assert params["headless"] is True
    assert params["choice"] == {
        "continue": False,
        "resume": "abcd",
        "fork": False,
        "explicit_cwd": True,
    }
    flags = params["flags"]
    assert flags["model"] == "m1"
    assert flags["max_steps"] == 7
    assert flags["yes"] is True
    assert flags["trust"] is False
    assert flags["provider"] is None
    # A relative config path is the client's: the host works in another directory.
    assert flags["config"] == str(iso.cwd / "my.toml")
    assert set(flags) >= {
        "provider",
        "model",
        "base_url",
        "max_steps",
        "sigterm_grace",
        "config",
        "agent",
        "permission_mode",
    }


def test_json_output_reports_the_hosts_session_totals(iso: Isolation, state: Path) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "hi", "--output-format", "json", env=env_for(state))
        peer = host.accept()
        peer.start_turn()
        play_a_turn(peer)
        usage = peer.expect("_rawtrio/session/usage")
        assert usage["params"] == {"sessionId": "s1"}
        peer.answer(usage, {"cost_usd": 1.5, "context_tokens": 123, "context_window": 1000})
        done = run.finish()
    assert done.returncode == 0, done.stderr
    [result] = done.json_lines()
    # Claude Code's result object (docs/compat.md), rawtrio's keys besides; durations come
    # from the events' timestamps, the uuid from the session id.
    assert isinstance(result.pop("duration_ms"), int)
    assert isinstance(result.pop("duration_api_ms"), int)
    assert isinstance(result.pop("uuid"), str)
    assert result == {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 2,
        "total_cost_usd": 0.25,
        # The played turn's denied call (no assistant message named its input).
        "permission_denials": [{"tool_name": "bash", "tool_use_id": "c1", "tool_input": {}}],
        "v": 1,
        "session_id": "s1",
        "turn_id": "t1",
        "outcome": "completed",
        "reason": "completed",
        "steps": 2,
        "result": "Hello from the host.",
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 2,
            "cache_read_input_tokens": 1,
            "cache_read_tokens": 1,
            "cache_write_tokens": 2,
            "cost_usd": 0.25,
            "session_cost_usd": 1.5,
            "context_tokens": 123,
            "context_window": 1000,
        },
    }
    assert done.stderr == "rawtrio: warning: careful\n"


def test_stream_json_writes_the_hosts_events(iso: Isolation, state: Path) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "hi", "--output-format", "events", env=env_for(state))
        peer = host.accept()
        peer.start_turn()
        play_a_turn(peer)
        done = run.finish()
    assert done.returncode == 0, done.stderr
    events = done.json_lines()
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5, 6, 7]
    assert events[-1]["type"] == "turn_ended"
    assert all(e["session_id"] == "s1" for e in events)


def test_a_host_of_another_version_is_left_alone_and_the_turn_runs_here(
    iso: Isolation, state: Path, fake_model: FakeModel
) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "say hello", *model_flags(fake_model), env=env_for(state))
        peer = host.accept()
        peer.handshake(version="0.0.1", protocol=99, pid=777)
        assert peer.read() is None  # the client hung up
        done = run.finish()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake model.\n"
    assert done.stderr == (
        "rawtrio: the host (pid 777) is rawtrio 0.0.1 (protocol 99); running here instead\n"
    )


def test_same_version_but_another_protocol_runs_here(
    iso: Isolation, state: Path, fake_model: FakeModel
) -> None:
    from rawtrio import __version__

    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "say hello", *model_flags(fake_model), env=env_for(state))
        host.accept().handshake(protocol=99, pid=778)
        done = run.finish()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake model.\n"
    assert done.stderr == (
        f"rawtrio: the host (pid 778) is rawtrio {__version__} (protocol 99); "
        "running here instead\n"
    )


def test_no_attach_and_attach_never_run_here_while_a_host_listens(
    iso: Isolation, state: Path, fake_model: FakeModel
) -> None:
    config = iso.home / ".config" / "rawtrio" / "config.toml"
    with fake_host(socket_of(iso, state)) as host:
        done = run_rawtrio(
            iso, "-p", "say hello", "--no-attach", *model_flags(fake_model), env=env_for(state)
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Hello from the fake model.\n"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text('[host]\nattach = "never"\n')
        done = run_rawtrio(iso, "-p", "say hello", *model_flags(fake_model), env=env_for(state))
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Hello from the fake model.\n"
        assert not host.connected()


def test_no_host_runs_here_quietly(iso: Isolation, state: Path, fake_model: FakeModel) -> None:
    done = run_rawtrio(iso, "-p", "say hello", *model_flags(fake_model), env=env_for(state))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake model.\n"
    assert done.stderr == ""


def test_a_host_that_goes_away_mid_turn_is_an_error(iso: Isolation, state: Path) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "hi", env=env_for(state))
        peer = host.accept()
        peer.start_turn()
        peer.event(ev.TextDelta(session_id="s1", turn_id="t1", seq=2, step=1, text="partial"))
        peer.close()
        done = run.finish()
    assert done.returncode == 1
    assert done.stdout == "partial"
    assert done.stderr == "rawtrio: error: the host (pid 4242) went away during the turn\n"


@pytest.mark.parametrize(
    ("data", "code"),
    [
        ({"kind": "NoCredentials", "exit_code": 4}, 4),
        ({"kind": "UnknownSession", "exit_code": 2}, 2),
        ({"kind": "SessionLocked", "exit_code": 5}, 5),
    ],
)
def test_an_error_the_local_run_would_raise_prints_as_it_would(
    iso: Isolation, state: Path, data: dict[str, object], code: int
) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "hi", env=env_for(state))
        peer = host.accept()
        peer.handshake()
        start = peer.expect("_rawtrio/session/start")
        peer.fail(start, -32000, "no API key for anthropic: set ANTHROPIC_API_KEY", data)
        done = run.finish()
    assert done.returncode == code
    assert done.stdout == ""
    assert done.stderr == "rawtrio: no API key for anthropic: set ANTHROPIC_API_KEY\n"


def test_a_busy_session_exits_as_a_locked_one(iso: Isolation, state: Path) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "hi", "--continue", env=env_for(state))
        peer = host.accept()
        peer.handshake()
        start = peer.expect("_rawtrio/session/start")
        assert start["params"]["choice"]["continue"] is True
        peer.answer(start, {"sessionId": "s1", "notices": ["a notice"], "running": True})
        submit = peer.expect("_rawtrio/session/submit")
        peer.fail(submit, -32002, "session s1 is running a turn")
        done = run.finish()
    assert done.returncode == 5
    assert done.stderr == "rawtrio: a notice\nrawtrio: session s1 is running a turn\n"


@pytest.mark.parametrize(
    ("first", "name", "code"),
    [(signal.SIGINT, "SIGINT", 130), (signal.SIGTERM, "SIGTERM", 143)],
)
def test_a_signal_cancels_the_remote_turn_once(
    iso: Isolation, state: Path, first: signal.Signals, name: str, code: int
) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "hi", "--output-format", "events", env=env_for(state))
        peer = host.accept()
        peer.start_turn()
        peer.event(ev.TextDelta(session_id="s1", turn_id="t1", seq=2, step=1, text="working"))
        run.wait_for_event("text_delta")
        run.signal(first, group=True)
        cancel = peer.expect("_rawtrio/session/cancel")
        assert "id" not in cancel  # a notification
        assert cancel["params"] == {"sessionId": "s1", "reason": f"received {name}"}
        # Further signals are noted and change nothing: no second cancel, same exit code.
        run.signal(signal.SIGINT if first is signal.SIGTERM else signal.SIGTERM, group=True)
        peer.event(
            ev.TurnEnded(
                session_id="s1",
                turn_id="t1",
                seq=3,
                outcome=TurnOutcome.CANCELLED,
                reason=f"received {name}",
                steps=1,
            )
        )
        done = run.finish()
        assert peer.read() is None  # nothing more was sent: the connection just closed
    assert done.returncode == code
    assert done.json_lines()[-1]["outcome"] == "cancelled"
    assert done.stderr == f"rawtrio: cancelled (received {name})\n"


def test_a_signal_while_the_session_starts_cancels_the_turn_once_submitted(
    iso: Isolation, state: Path
) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "hi", env=env_for(state))
        peer = host.accept()
        peer.handshake()
        start = peer.expect("_rawtrio/session/start")
        run.signal(signal.SIGINT, group=True)
        peer.answer(start, {"sessionId": "s1", "notices": []})
        submit = peer.expect("_rawtrio/session/submit")
        peer.answer(submit, {"turnId": "t1"})
        cancel = peer.expect("_rawtrio/session/cancel")
        assert cancel["params"]["reason"] == "received SIGINT"
        peer.event(
            ev.TurnEnded(
                session_id="s1",
                turn_id="t1",
                seq=2,
                outcome=TurnOutcome.CANCELLED,
                reason="received SIGINT",
                steps=0,
            )
        )
        done = run.finish()
    assert done.returncode == 130
    assert done.stderr == "rawtrio: cancelled (received SIGINT)\n"


def test_a_request_from_the_host_is_refused_not_left_waiting(iso: Isolation, state: Path) -> None:
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "hi", env=env_for(state))
        peer = host.accept()
        peer.start_turn()
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": 99,
                "method": "session/request_permission",
                "params": {"sessionId": "s1"},
            }
        )
        answer = peer.read()
        assert answer is not None
        assert answer["id"] == 99
        assert answer["error"]["code"] == -32601
        play_a_turn(peer)
        done = run.finish()
    assert done.returncode == 0, done.stderr


def test_a_peer_that_hangs_up_on_the_handshake_leaves_the_turn_to_this_process(
    iso: Isolation, state: Path, fake_model: FakeModel
) -> None:
    """As a host does to a peer of another uid: the connection closes unanswered."""
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, "-p", "say hello", *model_flags(fake_model), env=env_for(state))
        peer = host.accept()
        peer.expect("initialize")
        peer.close()
        done = run.finish()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake model.\n"
    [line] = done.stderr.splitlines()
    assert "did not answer the handshake" in line
    assert line.endswith("running here instead")


def test_attach_flags_need_a_headless_run_or_the_full_screen_chat(iso: Isolation) -> None:
    for flag in ("--attach", "--no-attach"):
        done = run_rawtrio(iso, flag)  # no terminal: the line chat, which never attaches
        assert done.returncode == 2
        assert f"{flag} applies to -p and the full-screen chat, not the line chat" in done.stderr
    done = run_rawtrio(iso, "-p", "x", "--attach", "--no-attach")
    assert done.returncode == 2
    assert "not allowed with argument" in done.stderr


def test_the_state_dir_is_the_stores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rawtrio.cli.attach import state_dir
    from rawtrio.store import paths

    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(tmp_path))
    assert state_dir() == paths.state_dir() == tmp_path
    assert json.dumps(str(state_dir()))
    assert os.path.isabs(state_dir())


def test_stream_input_a_signal_whose_turn_completed_anyway_ends_the_run_130(
    iso: Isolation, state: Path
) -> None:
    """`--input-format stream-json`: a SIGINT during a turn that the host then reports
    completed (the cancel came too late) ends the run as one waiting for the next message
    would, 130, as a local run does; it was exit 0 when the signal landed around the end."""
    args = ["-p", "--input-format", "stream-json", "--output-format", "events"]
    with fake_host(socket_of(iso, state)) as host:
        run = LiveRun.start(iso, *args, env=env_for(state), stdin=subprocess.PIPE)
        assert run.proc.stdin is not None
        run.proc.stdin.write('{"type": "user", "message": {"role": "user", "content": "hi"}}\n')
        run.proc.stdin.flush()
        peer = host.accept()
        peer.start_turn()
        peer.event(ev.TextDelta(session_id="s1", turn_id="t1", seq=2, step=1, text="done"))
        run.wait_for_event("text_delta")
        run.signal(signal.SIGINT, group=True)
        peer.expect("_rawtrio/session/cancel")
        peer.event(
            ev.TurnEnded(
                session_id="s1",
                turn_id="t1",
                seq=3,
                outcome=TurnOutcome.COMPLETED,
                reason="end_turn",
                steps=1,
            )
        )
        done = run.finish()  # stdin is still open: no message, no second submit
        run.proc.stdin.close()
        assert peer.read() is None
    assert done.returncode == 130, done.stderr
    assert done.json_lines()[-1]["outcome"] == "completed"
