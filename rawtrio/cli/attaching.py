"""What every front end that attaches to a host shares (`rawtrio -p`: `rawtrio.cli.attach`,
`rawtrio acp`: `rawtrio.acp.relay`): the decision, finding the host (or starting one) and
its version check, the client's session flags and environment, and a wake-up for blocking
loops when a signal arrives (docs/contracts.md, "The host and attaching").

Imports nothing heavy: no trio, no runtime, no configuration schema. Whatever it has to
say (a host of another version, one that did not come up) is one line, through the
caller's `say`, and the caller then runs in its own process.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from rawtrio import __version__
from rawtrio.cli.flags import HelpFormatter, add_session_flags
from rawtrio.errors import ConfigError

if TYPE_CHECKING:
    from rawtrio.host.client import HostConnection, HostInfo
    from rawtrio.host.paths import HostPaths

#: Liveness bounds, far above what a working host needs: connecting to its socket, its
#: answer to the handshake, and a host started here listening.
CONNECT_TIMEOUT_S: Final = 10.0
HANDSHAKE_TIMEOUT_S: Final = 30.0
AUTOSTART_TIMEOUT_S: Final = 60.0
#: Environment variables a host started here does not inherit: the keys of this process
#: are sent with its own sessions only (the same patterns tools never see).
HOST_STRIP_ENV: Final = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "*_API_KEY")
#: Flags a local headless run reads besides the session flags (`rawtrio.cli.flags`).
HEADLESS_FLAGS: Final = ("yes", "trust")

Say = Callable[[str], None]


def say_on_stderr(notice: str) -> None:
    print(f"rawtrio: {notice}", file=sys.stderr)


def attach_mode(args: argparse.Namespace) -> tuple[bool, bool]:
    """(attach to a running host, start one when none runs) for these flags (`--attach`,
    `--no-attach`, `--demo`, `--config`) and the `[host]` settings of the user config
    file."""
    if getattr(args, "no_attach", False) or getattr(args, "demo", False):
        return False, False
    if getattr(args, "attach", False):
        return True, True
    from rawtrio.host.settings import read_host_settings  # not for --no-attach, --attach

    try:
        settings = read_host_settings(getattr(args, "config", None))
    except ConfigError:
        return False, False  # the local run reports the file's problem as it always does
    if settings.attach == "never":
        return False, False
    return True, settings.autostart


def state_dir() -> Path:
    """The state directory (`rawtrio.store.paths`, which imports nothing heavy)."""
    from rawtrio.store.paths import state_dir

    return state_dir()


def find_host(
    args: argparse.Namespace, *, autostart: bool, say: Say = say_on_stderr
) -> tuple[HostConnection, HostInfo] | None:
    """A connection to this state directory's host, after a handshake that found it
    compatible; None (having said why, when it is not simply that none runs) to run here."""
    from rawtrio.host.paths import host_paths

    paths = host_paths(state_dir())
    if not autostart and not os.path.lexists(paths.socket):
        return None  # none runs: the socket client is not even loaded
    # Imported here: a run that never looks for a host (`--no-attach`, `host.attach =
    # "never"`), or finds no socket, loads no socket client.
    from rawtrio.host.client import HostConnection, HostGone, NoHost, ProtocolFault, RemoteError

    try:
        conn = HostConnection.connect(paths.socket, CONNECT_TIMEOUT_S)
    except NoHost:
        if not autostart:
            return None
        started = start_host(paths, args, say=say)
        if started is None:
            return None
        conn = started
    except OSError as exc:
        say(f"cannot reach the host at {paths.socket} ({_why(exc)}); running here instead")
        return None
    try:
        info = conn.initialize(__version__, HANDSHAKE_TIMEOUT_S)
    except (HostGone, TimeoutError, ProtocolFault, RemoteError) as exc:
        conn.close()
        say(
            f"the host at {paths.socket} did not answer the handshake ({exc}); running here instead"
        )
        return None
    if not info.compatible(__version__):
        conn.close()
        say(
            f"the host (pid {info.pid}) is rawtrio {info.version} (protocol {info.protocol}); "
            "running here instead"
        )
        return None
    return conn, info


def start_host(
    paths: HostPaths, args: argparse.Namespace, *, say: Say = say_on_stderr
) -> HostConnection | None:
    """Start `rawtrio serve --detach` for this state directory and connect to it once it
    listens; None (having said why) when it does not come up."""
    import subprocess
    import tempfile

    from rawtrio.host.client import HostConnection, NoHost
    from rawtrio.host.paths import lock_is_held

    env = {
        k: v
        for k, v in os.environ.items()
        if not any(fnmatch.fnmatchcase(k, pattern) for pattern in HOST_STRIP_ENV)
    }
    config = getattr(args, "config", None)
    if config is not None:  # the host reads its [host] table from the same file
        env["RAWTRIO_CONFIG"] = os.path.abspath(os.path.expanduser(config))
    argv = [sys.executable, "-m", "rawtrio", "serve", "--detach"]
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=env,
                cwd="/",
                start_new_session=True,  # a Ctrl-C meant for this run never reaches it
            )
        except OSError as exc:
            say(f"could not start a host ({_why(exc)}); running here instead")
            return None
        deadline = time.monotonic() + AUTOSTART_TIMEOUT_S
        while True:
            try:
                return HostConnection.connect(paths.socket, CONNECT_TIMEOUT_S)
            except NoHost:
                pass
            except OSError as exc:
                say(f"cannot reach the host at {paths.socket} ({_why(exc)}); running here instead")
                return None
            code = proc.poll()
            # Another front end's host may hold the lock and be about to listen: wait for it.
            if code not in (None, 0) and not lock_is_held(paths.lock):
                say(
                    f"could not start a host (rawtrio serve --detach exited {code}"
                    f"{_last_line(errors)}); running here instead"
                )
                return None
            if time.monotonic() > deadline:
                say(
                    f"the host started here is not listening on {paths.socket} after "
                    f"{AUTOSTART_TIMEOUT_S:.0f} s; running here instead"
                )
                return None
            time.sleep(0.02)


def _last_line(stream: IO[bytes]) -> str:
    stream.seek(0)
    lines = stream.read().decode("utf-8", "replace").strip().splitlines()
    return f": {lines[-1]}" if lines else ""


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def session_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The front end's session flags (`rawtrio.cli.flags`) and, where it has them, the
    headless ones (`--yes`, `--trust`), as JSON values, for the host to resolve a session
    with (paths made absolute: the host's working directory is not ours)."""
    probe = argparse.ArgumentParser(add_help=False, formatter_class=HelpFormatter)
    add_session_flags(probe)
    names = [*vars(probe.parse_args([])), *(n for n in HEADLESS_FLAGS if hasattr(args, n))]
    flags = {name: getattr(args, name, None) for name in names}
    config = flags.get("config")
    if isinstance(config, str):
        flags["config"] = os.path.abspath(os.path.expanduser(config))
    return flags


def client_env() -> dict[str, str]:
    """This process's environment for the host, a relative `RAWTRIO_CONFIG` made
    absolute."""
    env = dict(os.environ)
    if env.get("RAWTRIO_CONFIG"):
        env["RAWTRIO_CONFIG"] = os.path.abspath(os.path.expanduser(env["RAWTRIO_CONFIG"]))
    return env


@contextlib.contextmanager
def wake_on_signals() -> Iterator[int]:
    """A pipe that becomes readable when a signal arrives (`signal.set_wakeup_fd`), so a
    blocking `select` wakes for it; the process's handlers (`SignalLatch`) still note
    every signal."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    try:
        yield read_fd
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)


def drain(fd: int) -> None:
    """Empty the wake-up pipe of `wake_on_signals`."""
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 512):
            pass
