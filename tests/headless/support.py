"""Run the real `rawtrio` program in a subprocess, isolated from the user's files.

Every run gets its own HOME and XDG directories under the test's tmp_path and an
environment without the caller's API keys, base URLs or RAWTRIO_* settings, so a test
sees exactly the flags and variables it passes. rawtrio starts in a new session (its own
process group), so a test can signal the group without hitting pytest.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psutil
import trio

from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server

#: A liveness bound (never a performance assert): far above any budget in docs/benchmarks.md.
LIVENESS_S = 60.0

_STRIPPED_PREFIXES = ("ANTHROPIC_", "OPENAI_", "RAWTRIO_", "XDG_")


@dataclass(frozen=True)
class Isolation:
    """A private HOME, XDG tree and working directory for one rawtrio run."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def cwd(self) -> Path:
        return self.root / "work"

    def xdg(self) -> dict[str, str]:
        return {
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
        }

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        self.home.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIPPED_PREFIXES)}
        env.update(self.xdg(), HOME=str(self.home), PYTHONUNBUFFERED="1")
        # These tests are about front ends, signals and sessions, not approval: tools run
        # without asking unless a test sets another mode (tests/headless/test_permissions.py).
        env["RAWTRIO_PERMISSION_MODE"] = "bypass"
        env.update(extra or {})
        return env


def rawtrio_argv(*args: str) -> list[str]:
    """The real program: the venv's interpreter running the package."""
    return [sys.executable, "-m", "rawtrio", *args]


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


def run_rawtrio(
    iso: Isolation, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> Finished:
    """Run rawtrio to its end; the liveness bound turns a hang into a failure."""
    full_env = iso.env(env)
    proc = subprocess.run(
        rawtrio_argv(*args),
        cwd=iso.cwd,
        env=full_env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LIVENESS_S,
        start_new_session=True,
        check=False,
    )
    return Finished(proc.returncode, proc.stdout, proc.stderr)


@dataclass
class LiveRun:
    """A running rawtrio whose stdout lines are collected as they arrive."""

    proc: subprocess.Popen[str]
    stderr_path: Path
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    @classmethod
    def start(
        cls,
        iso: Isolation,
        *args: str,
        env: Mapping[str, str] | None = None,
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
    ) -> LiveRun:
        full_env = iso.env(env)
        stderr_path = iso.root / f"stderr-{time.monotonic_ns()}.txt"
        with stderr_path.open("w") as err:
            proc = subprocess.Popen(
                rawtrio_argv(*args),
                cwd=iso.cwd,
                env=full_env,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
        run = cls(proc, stderr_path)
        threading.Thread(target=run._read, daemon=True).start()
        return run

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                self._queue.put(line)
        self._queue.put(None)

    def wait_for_event(self, type_: str) -> dict[str, Any]:
        """Wait for the first `--output-format events` line of this type (liveness-bounded)."""
        return self.wait_for_line(lambda obj: obj.get("type") == type_)

    def wait_for_text(self, text: str) -> str:
        """Wait for the first output line containing `text` (liveness-bounded)."""
        deadline = time.monotonic() + LIVENESS_S
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line with {text!r} within {LIVENESS_S} s") from None
            if line is None:
                raise AssertionError(f"rawtrio ended first; stderr: {self.stderr()}")
            self.lines.append(line)
            if text in line:
                return line

    def wait_for_line(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + LIVENESS_S
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no matching line within {LIVENESS_S} s") from None
            if line is None:
                raise AssertionError(f"rawtrio ended first; stderr: {self.stderr()}")
            self.lines.append(line)
            obj = json.loads(line)
            if predicate(obj):
                return dict(obj)

    def finish(self) -> Finished:
        """Wait for the exit (liveness-bounded) and collect the rest of the output."""
        try:
            returncode = self.proc.wait(timeout=LIVENESS_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        while (line := self._queue.get(timeout=LIVENESS_S)) is not None:
            self.lines.append(line)
        return Finished(returncode, "".join(self.lines), self.stderr())

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def signal(self, sig: signal.Signals, *, group: bool) -> None:
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """Last resort after a failed test: the whole tree, so nothing outlives it."""
        with_children = [self.proc.pid, *descendant_pids(self.proc.pid, with_watchdog=True)]
        for pid in with_children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=LIVENESS_S)


def descendant_pids(pid: int, *, with_watchdog: bool = False) -> list[int]:
    """The processes below `pid`, without rawtrio's watchdog (not a tool's process) unless
    asked for."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [p.pid for p in children if with_watchdog or not is_watchdog(p)]


def is_watchdog(p: psutil.Process) -> bool:
    try:
        return any(arg.endswith("watchdog_process.py") for arg in p.cmdline())
    except psutil.Error:
        return False


def wait_until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + LIVENESS_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {LIVENESS_S} s: {what}")
        time.sleep(0.01)


def alive(procs: Sequence[psutil.Process]) -> list[psutil.Process]:
    """The processes still running (a zombie waiting for its reaper has ended)."""
    living = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                living.append(p)
        except psutil.NoSuchProcess:
            pass
    return living


def group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid:
                members.append(p)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return alive(members)


@contextlib.contextmanager
def fake_model_in_thread(scenario: Scenario) -> Iterator[FakeModelServer]:
    """The fake model server on a thread of the test process, so a test can read the
    requests rawtrio sent (`server.requests`). Leaving the block stops it."""
    handed: queue.Queue[tuple[FakeModelServer, trio.lowlevel.TrioToken, trio.Event] | None]
    handed = queue.Queue()
    failure: list[BaseException] = []

    async def serve() -> None:
        async with open_fake_model_server(scenario) as server:
            stop = trio.Event()
            handed.put((server, trio.lowlevel.current_trio_token(), stop))
            await stop.wait()

    def main() -> None:
        try:
            trio.run(serve)
        except BaseException as exc:
            failure.append(exc)
            handed.put(None)
            raise

    thread = threading.Thread(target=main, name="fake model server", daemon=True)
    thread.start()
    started = handed.get(timeout=LIVENESS_S)
    if started is None:
        raise AssertionError(f"the fake model server failed: {failure!r}")
    server, token, stop = started
    try:
        yield server
    finally:
        token.run_sync_soon(stop.set)
        thread.join(LIVENESS_S)
        assert not thread.is_alive(), "the fake model server did not stop"


class LineChat:
    """`rawtrio --plain` on a pipe (the line-mode chat): lines typed, lines waited for."""

    def __init__(self, iso: Isolation, *args: str) -> None:
        self.iso = iso
        self.run = LiveRun.start(
            iso,
            "--plain",
            "--sigterm-grace",
            "0.2",
            *args,
            env={"ANTHROPIC_API_KEY": "test-key"},
            stdin=subprocess.PIPE,
        )

    def send(self, line: str) -> None:
        stdin = self.run.proc.stdin
        assert stdin is not None
        stdin.write(line + "\n")
        stdin.flush()

    def wait_for(self, text: str) -> str:
        return self.run.wait_for_text(text)

    def ctrl_c(self) -> None:
        self.run.signal(signal.SIGINT, group=True)

    def turn(self, text: str) -> None:
        self.send(text)
        self.wait_for("(completed")

    def finish(self) -> str:
        """The chat's end (after `/quit`, or Ctrl-D); the whole output."""
        done = self.run.finish()
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        return done.stdout

    def leave(self) -> str:
        """Ctrl-D; the whole output."""
        stdin = self.run.proc.stdin
        assert stdin is not None
        stdin.close()
        return self.finish()

    def close(self) -> None:
        if self.run.proc.poll() is None:
            self.run.kill()
        if self.run.proc.stdin is not None:
            self.run.proc.stdin.close()


def stored_sessions(iso: Isolation) -> list[dict[str, Any]]:
    """`rawtrio sessions list --json` of the isolated state."""
    listed = run_rawtrio(iso, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)
    return found


def user_texts(iso: Isolation, sid: str) -> list[str]:
    """The user messages of stored session `sid`'s model context."""
    shown = run_rawtrio(iso, "sessions", "export", "--format", "json", sid)
    assert shown.returncode == 0, shown.stderr
    return [m["text"] for m in json.loads(shown.stdout)["context"] if m["role"] == "user"]
