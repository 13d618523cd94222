"""`rawtrio -p` attached to a real `rawtrio serve`, end to end: the real program on both
sides, the real socket, the fake model server over loopback (on a thread of the test, so
the requests can be read)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from rawtrio.host.paths import read_registration
from rawtrio.testing.fake_model import FakeModelServer
from tests.headless.support import (
    Finished,
    LiveRun,
    run_rawtrio,
    wait_until,
)
from tests.host.conftest import scenario
from tests.host.support import HostProcess, Place

SCENARIO: dict[str, Any] = scenario(
    {
        "match": "who runs tools",
        "replies": [
            {
                "tool_calls": [
                    {
                        "name": "bash",
                        "arguments": {
                            "command": 'echo "parent=$PPID cwd=$PWD marker=$RAWTRIO_MARKER"'
                        },
                    }
                ]
            },
            {"text": "told"},
        ],
    },
)


def rawtrio(place: Place, *args: str, **env: str) -> Finished:
    return run_rawtrio(place.iso, *args, env=place.env(env))


def live(place: Place, *args: str, **env: str) -> LiveRun:
    return LiveRun.start(place.iso, *args, env=place.env(env))


#: Fields that differ between any two runs: ids, clocks, durations, and how the prompt
#: splits between cached and not (the fake model's prompt cache is warm for the second run).
VARYING = {
    "ts",
    "session_id",
    "turn_id",
    "call_id",
    "request_id",
    "elapsed_s",
    "duration_s",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    # Claude Code's lines (`stream-json`, `json`): ids derived from the session id, the
    # message ids (call ids), durations, and the same token split under its names.
    "uuid",
    "id",
    "tool_use_id",
    "duration_ms",
    "duration_api_ms",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
}


def normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "*" if k in VARYING else normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def same_output(fmt: str, attached: Finished, local: Finished) -> None:
    assert attached.returncode == local.returncode
    assert attached.stderr == local.stderr
    if fmt == "text":
        assert attached.stdout == local.stdout
    else:
        assert normalized(attached.json_lines()) == normalized(local.json_lines())


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json", "events"])
def test_an_attached_run_prints_what_a_local_run_prints(
    place: Place, host: HostProcess, fmt: str
) -> None:
    attached = rawtrio(place, "-p", "use a tool", "--output-format", fmt)
    local = rawtrio(place, "-p", "use a tool", "--output-format", fmt, "--no-attach")
    assert attached.returncode == 0, attached.stderr
    same_output(fmt, attached, local)
    if fmt == "text":
        assert attached.stdout == "The tool said tool-output.\n"


def tool_output(done: Finished) -> str:
    """The first line of the one tool call's result (the line the command printed)."""
    [finished] = [e for e in done.json_lines() if e["type"] == "tool_call_finished"]
    return str(finished["content"]).splitlines()[0]


def test_tools_run_in_the_host_in_the_clients_directory_and_environment(
    place: Place, host: HostProcess
) -> None:
    sub = place.iso.cwd / "sub"
    sub.mkdir()
    args = ("-p", "who runs tools", "--output-format", "events", "--cwd", str(sub))
    attached = rawtrio(place, *args, RAWTRIO_MARKER="client-1")
    assert attached.returncode == 0, attached.stderr
    assert tool_output(attached).strip() == f"parent={host.proc.pid} cwd={sub} marker=client-1"
    # --no-attach: the same turn in the client's own process, though a host runs.
    run = live(place, *args, "--no-attach", RAWTRIO_MARKER="client-2")
    local = run.finish()
    assert local.returncode == 0, local.stderr
    assert tool_output(local).strip() == f"parent={run.proc.pid} cwd={sub} marker=client-2"


def test_sigint_cancels_the_remote_turn(place: Place, host: HostProcess) -> None:
    run = live(place, "-p", "sleep a while", "--output-format", "events")
    started = run.wait_for_event("tool_call_started")
    sleeper: list[psutil.Process] = []

    def sleeping_under_the_host() -> bool:
        children = psutil.Process(host.proc.pid).children(recursive=True)
        sleeper[:] = [p for p in children if "sleep" in p.name()]
        return bool(sleeper)

    wait_until(sleeping_under_the_host, "the tool's process runs under the host")
    run.signal(signal.SIGINT, group=True)
    done = run.finish()
    assert done.returncode == 130
    assert done.stderr == "rawtrio: cancelled (received SIGINT)\n"
    ended = done.json_lines()[-1]
    assert ended["type"] == "turn_ended"
    assert ended["outcome"] == "cancelled"
    assert ended["reason"] == "received SIGINT"
    psutil.wait_procs(sleeper, timeout=60)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in sleeper)
    # The turn is recorded cancelled in the store the host writes.
    shown = rawtrio(place, "sessions", "export", "--format", "json", started["session_id"])
    assert shown.returncode == 0, shown.stderr
    assert '"cancelled"' in shown.stdout
    assert "received SIGINT" in shown.stdout


def test_a_headless_ask_is_denied_unless_yes(place: Place, host: HostProcess) -> None:
    mode = {"RAWTRIO_PERMISSION_MODE": "default"}
    attached = rawtrio(place, "-p", "use a tool", **mode)
    local = rawtrio(place, "-p", "use a tool", "--no-attach", **mode)
    same_output("text", attached, local)
    assert "rawtrio: bash: denied by policy" in attached.stderr
    allowed = rawtrio(place, "-p", "use a tool", "--yes", **mode)
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout == "The tool said tool-output.\n"
    assert "denied" not in allowed.stderr


def test_the_clients_directory_decides_project_config_and_agents_md(
    place: Place, host: HostProcess, model: FakeModelServer
) -> None:
    project = place.iso.cwd / "project"
    (project / ".rawtrio").mkdir(parents=True)
    (project / ".rawtrio" / "config.toml").write_text("[agents.default]\nmax_steps = 1\n")
    (project / "AGENTS.md").write_text("Always answer in haiku (project marker 7f3a).\n")
    seen = len(model.requests)
    attached = rawtrio(place, "-p", "use a tool", "--cwd", str(project))
    local = rawtrio(place, "-p", "use a tool", "--cwd", str(project), "--no-attach")
    assert attached.returncode == 3, attached.stderr  # max_steps, from the project file
    same_output("text", attached, local)
    first = model.requests[seen]
    assert "project marker 7f3a" in json.dumps(first.body["system"])
    # The host's own directory has no such file: a run from elsewhere completes.
    elsewhere = rawtrio(place, "-p", "use a tool")
    assert elsewhere.returncode == 0, elsewhere.stderr


def registered_pid(place: Place) -> int | None:
    reg = read_registration(place.paths.registration)
    return reg.pid if reg is not None else None


@contextlib.contextmanager
def stopping_any_host(place: Place) -> Iterator[None]:
    try:
        yield
    finally:
        pid = registered_pid(place)
        if pid is not None:
            rawtrio(place, "serve", "--stop")
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).wait(timeout=60)


@pytest.mark.parametrize("how", ["config", "flag"])
def test_autostart_starts_a_host_and_attaches(place: Place, how: str) -> None:
    args: tuple[str, ...] = ("-p", "who runs tools", "--output-format", "events")
    if how == "config":
        config = place.iso.home / ".config" / "rawtrio" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[host]\nautostart = true\n")
    else:
        args = (*args, "--attach")
    assert registered_pid(place) is None
    with stopping_any_host(place):
        done = rawtrio(place, *args, RAWTRIO_MARKER="auto")
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        pid = registered_pid(place)
        assert pid is not None
        assert psutil.pid_exists(pid)
        assert tool_output(done).strip() == f"parent={pid} cwd={place.iso.cwd} marker=auto"
        # The host never saw this client's key: it was sent with the session only.
        environ = psutil.Process(pid).environ()
        assert "ANTHROPIC_API_KEY" not in environ
        # The next run attaches to the same host.
        again = rawtrio(place, *args, RAWTRIO_MARKER="again")
        assert tool_output(again).strip() == f"parent={pid} cwd={place.iso.cwd} marker=again"


def test_without_autostart_no_host_is_started(place: Place) -> None:
    done = rawtrio(place, "-p", "use a tool")
    assert done.returncode == 0, done.stderr
    assert registered_pid(place) is None
    assert not os.path.exists(place.paths.socket)


def test_the_host_killed_mid_turn_leaves_a_clear_error(place: Place, host: HostProcess) -> None:
    run = live(place, "-p", "sleep a while", "--output-format", "events")
    run.wait_for_event("tool_call_started")
    host.kill()
    done = run.finish()
    assert done.returncode == 1
    assert done.stderr == (
        f"rawtrio: error: the host (pid {host.proc.pid}) went away during the turn\n"
    )


def user_lines(*texts: str) -> str:
    return "".join(
        json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
        for text in texts
    )


def test_claude_codes_flags_and_input_attached_print_what_a_local_run_prints(
    place: Place, host: HostProcess
) -> None:
    """`--input-format stream-json` (a turn per message), `--output-format stream-json`
    and Claude Code's session flags, attached and local: the same lines; the second
    message's tool ran in the host (its parent), so the run was attached."""
    args = (
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "default",
        "--allowedTools",
        "Read,Bash",
        "--disallowedTools",
        "Bash(rm:*)",
        "--append-system-prompt",
        "Be brief.",
    )
    stdin = user_lines("use a tool", "who runs tools")
    attached = run_rawtrio(place.iso, *args, env=place.env(), stdin=stdin)
    local = run_rawtrio(place.iso, *args, "--no-attach", env=place.env(), stdin=stdin)
    assert attached.returncode == 0, attached.stderr
    ran_in = [
        block["content"]
        for line in attached.json_lines()
        if line["type"] == "user"
        for block in line["message"]["content"]
    ]
    assert ran_in[1].startswith(f"parent={host.proc.pid} ")
    pids = re.compile(r"parent=\d+")
    same_output(
        "stream-json",
        dataclasses.replace(attached, stdout=pids.sub("parent=N", attached.stdout)),
        dataclasses.replace(local, stdout=pids.sub("parent=N", local.stdout)),
    )
    results = [line for line in attached.json_lines() if line["type"] == "result"]
    assert [r["result"] for r in results] == ["The tool said tool-output.", "told"]
    assert all(r["permission_denials"] == [] for r in results)


@pytest.mark.parametrize("where", ["attached", "local"])
def test_stream_input_signals_between_and_during_turns(
    place: Place, host: HostProcess, where: str
) -> None:
    """`--input-format stream-json`: a turn per message as it comes (the result line
    before the next is read); SIGINT while it waits for a message ends the run (130) with
    no turn; SIGINT during a turn cancels it, prints its result and ends the run."""
    args = ["-p", "--input-format", "stream-json", "--output-format", "stream-json"]
    if where == "local":
        args.append("--no-attach")
    waiting = LiveRun.start(place.iso, *args, env=place.env(), stdin=subprocess.PIPE)
    assert waiting.proc.stdin is not None
    waiting.proc.stdin.write(user_lines("say hello"))
    waiting.proc.stdin.flush()
    first = waiting.wait_for_event("result")
    assert first["result"] == "Hello from the fake model."
    waiting.signal(signal.SIGINT, group=True)  # stdin stays open: it waits for a message
    done = waiting.finish()
    assert done.returncode == 130, done.stderr
    assert [line["type"] for line in done.json_lines()][-1] == "result"
    waiting.proc.stdin.close()

    mid_turn = LiveRun.start(place.iso, *args, env=place.env(), stdin=subprocess.PIPE)
    assert mid_turn.proc.stdin is not None
    mid_turn.proc.stdin.write(user_lines("sleep a while", "say hello"))
    mid_turn.proc.stdin.flush()
    mid_turn.wait_for_line(lambda line: line["type"] == "assistant")
    mid_turn.signal(signal.SIGINT, group=True)
    done = mid_turn.finish()
    mid_turn.proc.stdin.close()
    assert done.returncode == 130, done.stderr
    results = [line for line in done.json_lines() if line["type"] == "result"]
    assert len(results) == 1  # the second message never ran
    assert results[0]["subtype"] == "error_during_execution"
    assert results[0]["errors"] == ["received SIGINT"]
    assert "rawtrio: cancelled (received SIGINT)" in done.stderr
