"""`rawtrio serve`: one host per state directory, its files and modes, status, stop,
detach, idle exit, a stale socket, and peers of another uid (docs/contracts.md, "The host
and attaching")."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
import time

import pytest

from tests.conftest import requires
from tests.headless.support import LIVENESS_S
from tests.host.support import Client, HostProcess, Place

NOBODY = 65534


def _mode(path: os.PathLike[str] | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _umask_0() -> None:
    os.umask(0)


def test_serve_status_second_host_and_stop(place: Place) -> None:
    host = HostProcess.start(place, "--idle-exit", "0")
    try:
        reg = host.wait_registered()
        assert reg.socket == str(place.paths.socket)
        status = place.rawtrio("serve", "--status")
        assert status.returncode == 0, status.stderr
        shown = json.loads(status.stdout)
        assert shown["registration"]["pid"] == host.proc.pid
        assert shown["status"]["pid"] == host.proc.pid
        assert shown["status"]["sessions"] == []

        second = place.rawtrio("serve", "--idle-exit", "0")
        assert second.returncode == 2
        assert f"a host already runs for {place.paths.state} (pid {host.proc.pid})" in (
            second.stderr
        )

        stop = place.rawtrio("serve", "--stop")
        assert stop.returncode == 0, stop.stderr
        assert host.wait_exit() == 0
        assert not place.paths.socket.exists()
        assert not place.paths.registration.exists()
        gone = place.rawtrio("serve", "--status")
        assert gone.returncode == 3
        assert "no host running" in gone.stderr
    finally:
        host.kill()


def test_sigterm_exits_zero_and_removes_its_files(place: Place) -> None:
    host = HostProcess.start(place, "--idle-exit", "0")
    try:
        host.wait_registered()
        os.kill(host.proc.pid, signal.SIGTERM)
        assert host.wait_exit() == 0
        assert not place.paths.socket.exists()
        assert not place.paths.registration.exists()
    finally:
        host.kill()


def test_detach_starts_a_background_host(place: Place) -> None:
    started = place.rawtrio("serve", "--detach", "--idle-exit", "0")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    try:
        assert info["socket"] == str(place.paths.socket)
        client = Client.connect(place.paths.socket)
        meta = client.initialize()["_meta"]["rawtrio"]
        assert meta["pid"] == info["pid"]
        client.close()
        assert _mode(place.paths.log) == 0o600
        again = place.rawtrio("serve", "--detach")
        assert again.returncode == 2
        assert f"(pid {info['pid']})" in again.stderr
    finally:
        stop = place.rawtrio("serve", "--stop")
    assert stop.returncode == 0, stop.stderr
    assert not place.paths.registration.exists()


def test_socket_folder_0700_and_socket_0600_under_umask_0(place: Place) -> None:
    host = HostProcess.start(place, "--idle-exit", "0", preexec=_umask_0)
    try:
        host.wait_registered()
        assert _mode(place.paths.socket.parent) == 0o700
        assert _mode(place.paths.socket) == 0o600
        assert stat.S_ISSOCK(os.stat(place.paths.socket).st_mode)
        assert _mode(place.paths.registration) == 0o600
    finally:
        host.kill()


def test_a_peer_of_another_uid_is_closed_unanswered(place: Place) -> None:
    requires(os.geteuid() == 0, "needs root to connect as another uid")
    host = HostProcess.start(place, "--idle-exit", "0")
    try:
        host.wait_registered()
        # Let the other uid reach the socket, so the check under test is SO_PEERCRED's.
        for folder in (place.runtime, place.paths.socket.parent):
            os.chmod(folder, 0o711)
        os.chmod(place.paths.socket, 0o666)
        sock_path = place.paths.socket  # (computed as this uid: the folder is ours)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the peer: another uid, a raw initialize, then what came back
            code = 1
            try:
                os.close(read_end)
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                client = Client.connect(sock_path)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # closed first
                    client.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
                code = 0 if client.closed_unanswered() else 3
            except BaseException as exc:  # say why, in the parent's assertion
                os.write(write_end, repr(exc).encode())
            finally:
                os._exit(code)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as why:
            problem = why.read().decode()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, problem or "the host answered"
        assert f"refused a connection from uid {NOBODY}" in host.output()
        # The host goes on serving its own user.
        client = Client.connect(place.paths.socket)
        assert client.initialize()["_meta"]["rawtrio"]["pid"] == host.proc.pid
        client.close()
    finally:
        host.kill()


def test_a_stale_socket_is_replaced_by_the_next_host(place: Place) -> None:
    first = HostProcess.start(place, "--idle-exit", "0")
    first.wait_registered()
    first.kill()  # SIGKILL: the socket file and host.json stay behind
    assert place.paths.socket.exists()
    refused = place.rawtrio("serve", "--status")
    assert refused.returncode == 3
    second = HostProcess.start(place, "--idle-exit", "0")
    try:
        reg = second.wait_registered()
        assert reg.pid == second.proc.pid != first.proc.pid
        client = Client.connect(place.paths.socket)
        assert client.initialize()["_meta"]["rawtrio"]["pid"] == second.proc.pid
        client.close()
    finally:
        second.kill()


def test_idle_exit(place: Place) -> None:
    host = HostProcess.start(place, "--idle-exit", "1")
    try:
        host.wait_registered()
        client = Client.connect(place.paths.socket)
        client.initialize()
        session = client.start(place, flags={"base_url": place.base_url})
        client.result("_rawtrio/session/submit", {"sessionId": session["sessionId"], "text": "hi"})
        assert client.wait_event("turn_ended")["outcome"] == "completed"
        time.sleep(1.5)  # idle only once the connection is gone: still serving
        assert host.proc.poll() is None
        client.close()
        assert host.wait_exit() == 0
        assert "idle for 1 s" in host.output()
        assert not place.paths.registration.exists()
        assert not place.paths.socket.exists()
    finally:
        host.kill()


def test_bad_arguments_are_usage_errors(place: Place) -> None:
    bad = place.rawtrio("serve", "--idle-exit", "-1")
    assert bad.returncode == 2
    assert "--idle-exit" in bad.stderr
    assert not place.paths.lock.exists()


if sys.platform != "linux":  # SO_PEERCRED and the socket folder are Linux's
    pytestmark = pytest.mark.skip(reason="Linux only")
_ = LIVENESS_S
