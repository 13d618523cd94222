"""Where a host's files are, for one state directory (docs/contracts.md, "The host and
attaching").

- `host.lock` in the state directory: held (`flock`) by the running host for its whole
  life, so there is one host per state directory and a dead host's lock is free at once.
- `host.json` in the state directory (0600): the running host's registration — pid,
  version, protocol, socket path, start time, WebSocket URL.
- `host.log` in the state directory (0600): the log of a host started with `--detach`.
- The socket: `$XDG_RUNTIME_DIR/rawtrio/host-<key>.sock` when `XDG_RUNTIME_DIR` is a
  directory of ours, else `<state dir>/run/host.sock`; its directory is 0700 and the
  socket 0600. `<key>` names the state directory, so hosts of different state
  directories never share a socket.

Imports nothing heavy: a front end reads these before it decides to attach.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

# The socket's name digests the state directory. CPython's built-in SHA-256 gives the same
# digest as `hashlib`'s without loading OpenSSL (~5 ms of every attached client's start);
# `hashlib` where the interpreter has no such module.
try:
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:
        from hashlib import sha256 as _sha256  # type: ignore[assignment, unused-ignore]

#: The attach protocol's version: a host and a client attach only when both their rawtrio
#: version and this number agree.
PROTOCOL: Final = 1
LOCK_NAME: Final = "host.lock"
REGISTRATION_NAME: Final = "host.json"
LOG_NAME: Final = "host.log"
#: The longest path an AF_UNIX socket address takes on Linux (108 bytes with the NUL).
MAX_SOCKET_PATH: Final = 107


class HostPaths(NamedTuple):
    state: Path
    lock: Path
    registration: Path
    log: Path
    socket: Path


def host_paths(state: Path, env: Mapping[str, str] | None = None) -> HostPaths:
    """The host files for the state directory `state` (absolute, symlinks resolved)."""
    env = os.environ if env is None else env
    state = state.expanduser().resolve()
    return HostPaths(
        state=state,
        lock=state / LOCK_NAME,
        registration=state / REGISTRATION_NAME,
        log=state / LOG_NAME,
        socket=_socket_path(state, env),
    )


def socket_path_fits(path: Path) -> bool:
    """Whether `path` can be a Unix socket's address (no host listens at one that cannot)."""
    return len(os.fsencode(path)) <= MAX_SOCKET_PATH


def _socket_path(state: Path, env: Mapping[str, str]) -> Path:
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and _ours(Path(runtime)):
        key = _sha256(os.fsencode(state)).hexdigest()[:16]
        candidate = Path(runtime) / "rawtrio" / f"host-{key}.sock"
        if socket_path_fits(candidate):
            return candidate
    return state / "run" / "host.sock"


def _ours(folder: Path) -> bool:
    try:
        st = folder.stat()
    except OSError:
        return False
    return folder.is_dir() and st.st_uid == os.getuid()


class Registration(NamedTuple):
    """What a running host wrote into `host.json`."""

    pid: int
    version: str
    protocol: int
    socket: str
    started: float
    ws: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "version": self.version,
            "protocol": self.protocol,
            "socket": self.socket,
            "started": self.started,
            "ws": self.ws,
        }


def read_registration(path: Path) -> Registration | None:
    """The registration in `path`, or None when there is none or it cannot be read (a
    host that died while writing it, a file of another rawtrio)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Registration(
            pid=int(data["pid"]),
            version=str(data["version"]),
            protocol=int(data["protocol"]),
            socket=str(data["socket"]),
            started=float(data["started"]),
            ws=None if data.get("ws") is None else str(data["ws"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def lock_is_held(path: Path) -> bool:
    """Whether a running host holds the lock `path` now (tested with a shared lock that is
    released at once)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def lock_pid(path: Path) -> int | None:
    """The pid a host wrote into its lock file, or None."""
    try:
        return int(path.read_text(encoding="ascii").strip() or "x")
    except (OSError, ValueError):
        return None
