"""`rawtrio undo`, `redo` and `rewind` never change a session another process has open:
a real session live in this test process (its writer lease held in a real SQLite store),
and the commands run as real processes beside it."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from rawtrio import __version__
from rawtrio.app.choice import writer_lease
from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.contracts import TurnOutcome
from rawtrio.host.paths import PROTOCOL, HostPaths, Registration, host_paths
from rawtrio.store.sqlite import SqliteStore
from tests.checkpoints.helpers import picture
from tests.checkpoints.rewind_support import (
    PROMPTS,
    make_small_project,
    scenario_three_turns,
    stored_session,
)
from tests.checkpoints.test_cli_undo import rawtrio
from tests.conftest import session_on
from tests.host.fake_host import fake_host
from tests.host.support import short_runtime_dir


@contextlib.contextmanager
def registered_host(
    state: Path, *, pid: int | None = None, version: str = __version__, started: float = 0.0
) -> Iterator[tuple[dict[str, str], HostPaths]]:
    """The environment of a shell whose state dir names a host (this test process by
    default) registered at the socket a fake host may listen on."""
    with short_runtime_dir() as runtime_dir:
        env = {**os.environ, "RAWTRIO_STATE_DIR": str(state), "XDG_RUNTIME_DIR": str(runtime_dir)}
        paths = host_paths(state, env)
        state.mkdir(parents=True, mode=0o700)
        holder = os.getpid() if pid is None else pid
        registration = Registration(holder, version, PROTOCOL, str(paths.socket), started)
        paths.registration.write_text(json.dumps(registration.to_json()), "utf-8")
        yield env, paths


async def test_undo_and_rewind_of_a_session_open_elsewhere_are_refused_with_exit_5(
    tmp_path: Path,
) -> None:
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state"
    async with stored_session(project, state) as (store, session):
        for text in PROMPTS:
            await session.run_turn(text)
        after = picture(project)
        sessions_before = len(await store.list_sessions())
        for args in (
            ("undo",),
            ("undo", "--session", session.id[:8], "--turn", "2"),
            ("rewind", "--to", "1"),
            ("rewind", "--session", session.id, "--to", "2", "--files"),
        ):
            run = functools.partial(rawtrio, project, state, *args)
            refused = await trio.to_thread.run_sync(run)
            assert refused.returncode == 5, (args, refused.stdout, refused.stderr)
            assert f"session {session.id} is open in another process" in refused.stderr
            assert f"(pid {os.getpid()})" in refused.stderr
            assert f"use /{args[0]} there, or close it first" in refused.stderr
            assert refused.stdout == ""
        # Nothing changed: the files, the checkpoints, the sessions (no fork).
        assert picture(project) == after
        sets = CheckpointStore(state / "checkpoints", project).change_sets(session.id)
        assert [c.state for c in sets] == ["applied"] * 3
        assert len(await store.list_sessions()) == sessions_before
        # The live session goes on writing: the refused commands took nothing from it.
        await session.run_turn("and one more")
    # Closed: the same commands work now.
    undone = await trio.to_thread.run_sync(lambda: rawtrio(project, state, "undo"))
    assert undone.returncode == 0, undone.stderr
    rewound = await trio.to_thread.run_sync(lambda: rawtrio(project, state, "rewind", "--to", "1"))
    assert rewound.returncode == 0, rewound.stderr
    assert not (project / "a.txt").exists()


async def test_a_session_opened_in_the_runtime_meanwhile_keeps_the_lease(tmp_path: Path) -> None:
    """A host's `_rawtrio/rewind` holds the lease in the host's own store; a client that
    resumes the session meanwhile opens it in the same runtime, sharing that lease: the
    rewind's end must not take it from the live session."""
    project = make_small_project(tmp_path / "p")
    async with (
        SqliteStore(tmp_path / "state" / "sessions.db") as store,
        session_on(scenario_three_turns(), "anthropic", project, store=store) as (
            session,
            _s,
            runtime,
        ),
    ):
        options = session.options
        await session.close()
        async with writer_lease(runtime, session.id):
            assert store.leases.holds(session.id)
            reopened = await runtime.open_session(session.id, options)
        assert store.leases.holds(session.id)  # still the live session's
        ended = await reopened.run_turn(PROMPTS[0])
        assert ended.outcome is TurnOutcome.COMPLETED
        assert [e.type for e in await store.events_since(session.id, 0)][-1] == "turn_ended"


@pytest.mark.parametrize(
    ("version", "pid_is_holder", "says"),
    [
        # A host of another version holds it: the refusal naming the host, as before.
        ("0.0.1", True, "the rawtrio host (`rawtrio serve`); use /undo in a chat attached to it"),
        # A host of this version runs, but another process (this one) holds the session.
        (__version__, False, "use /undo there, or close it first"),
    ],
)
async def test_a_host_that_is_not_the_holder_or_of_another_version_is_not_asked(
    tmp_path: Path, version: str, pid_is_holder: bool, says: str
) -> None:
    """Only the host that holds the session, of this version, is asked to undo: otherwise
    the command says nothing more than the refusal (exit 5), and the host hears nothing
    after the handshake (the client hangs up)."""
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state"
    pid = os.getpid() if pid_is_holder else 777
    with registered_host(state, pid=pid, version=version, started=time.time()) as (env, paths):
        async with stored_session(project, state) as (_store, session):
            await session.run_turn(PROMPTS[0])
            after = picture(project)
            with fake_host(paths.socket) as host:

                def undo() -> subprocess.CompletedProcess[str]:
                    return subprocess.run(
                        [sys.executable, "-m", "rawtrio", "undo"],
                        cwd=project,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=60,
                    )

                heard: list[dict[str, object] | None] = []

                def serve() -> None:
                    peer = host.accept()
                    peer.handshake(version=version, pid=pid)
                    heard.append(peer.read())  # None: the client hung up, asking nothing

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(functools.partial(trio.to_thread.run_sync, serve))
                    refused = await trio.to_thread.run_sync(undo)
            assert refused.returncode == 5, refused.stderr
            assert says in refused.stderr
            assert "running here instead" not in refused.stderr
            assert refused.stdout == ""
            assert heard == [None]
            assert picture(project) == after


def _shell(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rawtrio", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "method"),
    [(("undo",), "_rawtrio/undo"), (("rewind", "--to", "1", "--files"), "_rawtrio/rewind")],
)
async def test_a_session_the_host_let_go_before_it_was_asked_is_done_here(
    tmp_path: Path, args: tuple[str, ...], method: str
) -> None:
    """The race of the shell's `rawtrio undo` (or `rewind`) with the session closing in the
    host: the host's status lists it live, it closes (its lease given back) before the
    request arrives, and the host answers -32002 with `data.reason` "not_live". The session
    is free: the command takes its lease and does the work here, with a local run's output
    and exit code, instead of printing the host's "not live" as a refusal (exit 5). The
    host, played by a fake on the socket, is this test process, which holds the lease."""
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state"
    with registered_host(state) as (env, paths):
        async with stored_session(project, state) as (store, session):
            pictures = []
            for text in PROMPTS:
                pictures.append(picture(project))
                await session.run_turn(text)
            heard: list[object] = []
            with fake_host(paths.socket) as host:

                def serve() -> None:
                    peer = host.accept()
                    peer.handshake(pid=os.getpid())
                    status = peer.expect("_rawtrio/host/status")
                    live = {"id": session.id, "running": None, "clients": 1}
                    peer.answer(status, {"sessions": [live]})
                    request = peer.read()
                    assert request is not None
                    heard.append(request["method"])
                    trio.from_thread.run(session.close)  # the lease is given back
                    message = f"session {session.id!r} is not live in this host"
                    peer.fail(request, -32002, message, {"reason": "not_live"})
                    heard.append(peer.read())  # None: the client hung up

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(functools.partial(trio.to_thread.run_sync, serve))
                    run = functools.partial(_shell, project, env, *args)
                    done = await trio.to_thread.run_sync(run)
            assert done.returncode == 0, done.stderr
            assert "not live" not in done.stderr
            assert heard == [method, None]
            if args[0] == "undo":  # checkpoint 3 undone, here
                assert done.stdout.startswith(f"undo checkpoint 3 of session {session.id[:8]}")
                assert picture(project) == pictures[2]
            else:  # every file back to before prompt 1
                assert "rewound to prompt 1: 4 files restored" in done.stderr
                assert picture(project) == pictures[0]
            assert not store.leases.holds(session.id)  # given back by the command, too


async def test_a_turn_running_in_the_host_is_still_its_refusal(tmp_path: Path) -> None:
    """The other -32002 (`data.reason` "turn_running") is a refusal as before: exit 5 with
    the host's message, nothing run here."""
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state"
    with registered_host(state) as (env, paths):
        async with stored_session(project, state) as (store, session):
            await session.run_turn(PROMPTS[0])
            after = picture(project)
            with fake_host(paths.socket) as host:

                def serve() -> None:
                    peer = host.accept()
                    peer.handshake(pid=os.getpid())
                    status = peer.expect("_rawtrio/host/status")
                    live = {"id": session.id, "running": "t9", "clients": 1}
                    peer.answer(status, {"sessions": [live]})
                    request = peer.expect("_rawtrio/undo")
                    message = "a turn is running; cancel it first to undo or redo"
                    peer.fail(request, -32002, message, {"reason": "turn_running"})
                    assert peer.read() is None  # the client hung up, asking nothing more

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(functools.partial(trio.to_thread.run_sync, serve))
                    done = await trio.to_thread.run_sync(
                        functools.partial(_shell, project, env, "undo")
                    )
            assert done.returncode == 5, done.stderr
            assert "a turn is running; cancel it first to undo or redo" in done.stderr
            assert picture(project) == after
            assert store.leases.holds(session.id)  # still the live session's
