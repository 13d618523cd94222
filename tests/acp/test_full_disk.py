"""`rawtrio acp` with its state dir on a real, full file system (a 4 MiB tmpfs).

The server runs in a mount namespace of its own (`unshare -m`), where the tmpfs is
mounted; the test reaches that file system through `/proc/<pid>/root`. A turn that hits
the full disk answers with an error naming it; the server and its other session keep
serving; once space is freed, both sessions work again and the database opens clean,
every session listed (never mistaken for a corrupt file).
"""

from __future__ import annotations

import errno
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from rawtrio.store.sqlite import SqliteStore
from tests.acp.conftest import LIVENESS_S, FakeModel, acp_argv, acp_env
from tests.acp.test_stdio_wire import RawClient
from tests.conftest import requires
from tests.headless.support import Isolation

MOUNT = 'mount -t tmpfs -o size=4m,mode=0700 tmpfs "$0" && exec "$@"'


def _can_mount(where: Path) -> str | None:
    """Why a private tmpfs cannot be mounted here (None: it can)."""
    if shutil.which("unshare") is None:
        return "`unshare` (util-linux) is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", MOUNT, str(where), "true"],
        capture_output=True,
        text=True,
        timeout=LIVENESS_S,
    )
    if probe.returncode != 0:
        return f"cannot mount a private tmpfs (needs root or CAP_SYS_ADMIN): {probe.stderr.strip()}"
    return None


@pytest.fixture
def server(
    fake_model: FakeModel, iso: Isolation, tmp_path: Path
) -> Iterator[tuple[RawClient, Path]]:
    state = tmp_path / "state"
    state.mkdir()
    why = _can_mount(state)
    requires(why is None, why or "")
    env = acp_env(iso, {"RAWTRIO_STATE_DIR": str(state)})
    with (tmp_path / "stderr.txt").open("w") as stderr:
        proc = subprocess.Popen(
            ["unshare", "-m", "sh", "-c", MOUNT, str(state), *acp_argv(fake_model)],
            env=env,
            cwd=iso.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    client = RawClient(proc)
    try:
        init = client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        yield client, Path(f"/proc/{proc.pid}/root{state}")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=LIVENESS_S)
        client.reader.join(timeout=LIVENESS_S)
        assert proc.stdout is not None
        proc.stdout.close()


def _fill(where: Path) -> Path:
    filler = where / "filler"
    with pytest.raises(OSError, match="No space left") as full:
        _write_until_full(filler)
    assert full.value.errno == errno.ENOSPC
    return filler


def _write_until_full(path: Path) -> None:
    chunk = b"\0" * 65536
    with path.open("wb") as f:
        while True:
            f.write(chunk)
            f.flush()


def _prompt(client: RawClient, sid: str, text: str) -> dict[str, object]:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    return client.call("session/prompt", params)


def test_a_full_disk_fails_the_turn_and_nothing_else(
    server: tuple[RawClient, Path], iso: Isolation, tmp_path: Path
) -> None:
    client, state = server
    new = {"cwd": str(iso.cwd), "mcpServers": []}
    a = client.call("session/new", new)["result"]["sessionId"]
    b = client.call("session/new", new)["result"]["sessionId"]
    assert _prompt(client, a, "hello")["result"] == {"stopReason": "end_turn"}
    filler = _fill(state)
    failed = _prompt(client, a, "hello " + "x" * 300_000)
    assert "error" in failed, failed
    assert "full" in str(failed["error"]), failed
    # The server is up: it answers, and the other session is still there.
    listed = client.call("session/list", {})["result"]["sessions"]
    assert {a, b} <= {s["sessionId"] for s in listed}
    _prompt(client, b, "hello")  # an answer of either kind: the connection serves
    filler.unlink()
    for sid in (a, b):
        assert _prompt(client, sid, "hello again")["result"] == {"stopReason": "end_turn"}
    # The file a full disk left behind opens as it is: every session listed.
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("sessions.db", "sessions.db-wal"):
        if (state / name).exists():
            shutil.copyfile(state / name, copy / name)

    async def reopen() -> set[str]:
        async with SqliteStore(copy / "sessions.db") as store:
            assert store.unusable is None
            return {r.id for r in await store.list_sessions()}

    assert trio.run(reopen) >= {a, b}
