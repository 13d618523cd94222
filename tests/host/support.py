"""A real `rawtrio serve` in a subprocess, and a raw JSON-line client on its real socket.

Each test gets a short private folder under /tmp for `XDG_RUNTIME_DIR` (a socket path must
stay under 108 bytes) and its own state directory, HOME and XDG tree (`Isolation`).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rawtrio.host.paths import HostPaths, Registration, host_paths, read_registration
from tests.headless.support import LIVENESS_S, Isolation, rawtrio_argv, run_rawtrio

KEY = "test-key"


@dataclass
class Place:
    """Where one host lives: isolation, state directory and runtime directory."""

    iso: Isolation
    runtime: Path
    base_url: str

    @property
    def state(self) -> Path:
        return self.iso.root / "state"

    @property
    def paths(self) -> HostPaths:
        return host_paths(self.state, {"XDG_RUNTIME_DIR": str(self.runtime)})

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return self.iso.env(
            {
                "XDG_RUNTIME_DIR": str(self.runtime),
                "RAWTRIO_STATE_DIR": str(self.state),
                "ANTHROPIC_API_KEY": KEY,
                "ANTHROPIC_BASE_URL": self.base_url,
                **(extra or {}),
            }
        )

    def client_env(self) -> dict[str, str]:
        """What an attaching client sends as its environment."""
        return {"ANTHROPIC_API_KEY": KEY, "RAWTRIO_PERMISSION_MODE": "bypass"}

    def rawtrio(self, *args: str) -> Any:
        return run_rawtrio(self.iso, *args, env=self.env())


@contextlib.contextmanager
def short_runtime_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rh", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class HostProcess:
    place: Place
    proc: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(
        cls,
        place: Place,
        *args: str,
        preexec: Callable[[], None] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> HostProcess:
        """`rawtrio serve ARGS` in the place's environment (plus `env`)."""
        log = place.iso.root / f"host-{time.monotonic_ns()}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                rawtrio_argv("serve", *args),
                cwd=place.iso.cwd,
                env=place.env(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                preexec_fn=preexec,
            )
        return cls(place, proc, log)

    def wait_registered(self) -> Registration:
        """The host's registration once it wrote it (it listens by then)."""
        deadline = time.monotonic() + LIVENESS_S
        while time.monotonic() < deadline:
            reg = read_registration(self.place.paths.registration)
            if reg is not None and reg.pid == self.proc.pid:
                return reg
            if self.proc.poll() is not None:
                raise AssertionError(f"the host exited {self.proc.returncode}: {self.output()}")
            time.sleep(0.05)
        raise AssertionError(f"the host did not register within {LIVENESS_S} s")

    def wait_exit(self) -> int:
        return self.proc.wait(timeout=LIVENESS_S)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=LIVENESS_S)


@dataclass
class Client:
    """A raw JSON-RPC client: one JSON text per line on the host's socket."""

    sock: socket.socket
    messages: queue.Queue[dict[str, Any] | None] = field(default_factory=queue.Queue)
    events: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    _next: int = 0

    @classmethod
    def connect(cls, path: Path) -> Client:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.fspath(path))
        client = cls(sock)
        threading.Thread(target=client._read, daemon=True).start()
        return client

    def _read(self) -> None:
        with contextlib.suppress(OSError), self.sock.makefile("rb") as f:
            for line in f:
                self.messages.put(json.loads(line))
        self.messages.put(None)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The whole response (`result` or `error`); notifications are kept meanwhile."""
        self._next += 1
        rid = self._next
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self._until(lambda m: m.get("id") == rid and "method" not in m)

    def result(self, method: str, params: dict[str, Any]) -> Any:
        answer = self.call(method, params)
        assert "error" not in answer, answer
        return answer["result"]

    def initialize(self) -> Any:
        return self.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    def wait_event(self, type_: str) -> dict[str, Any]:
        """The first event of this type (received already, or waited for)."""
        return self.wait_until(lambda e: e["type"] == type_)

    def wait_until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        for event in self.events:
            if predicate(event):
                return event
        message = self._until(
            lambda m: m.get("method") == "_rawtrio/event" and predicate(m["params"]["event"])
        )
        return dict(message["params"]["event"])

    def _until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + LIVENESS_S
        while True:
            try:
                message = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no matching message within {LIVENESS_S} s") from None
            if message is None:
                raise AssertionError("the host closed the connection")
            if message.get("method") == "_rawtrio/event":
                self.events.append(message["params"]["event"])
            elif "method" in message:
                self.notifications.append(message)
            if predicate(message):
                return message

    def closed_unanswered(self) -> bool:
        """Whether the host closes the connection without sending anything."""
        try:
            message = self.messages.get(timeout=LIVENESS_S)
        except queue.Empty:
            return False
        return message is None

    def wait_closed(self) -> None:
        """Wait until the host ends the connection (what came before it is kept)."""
        while True:
            try:
                message = self.messages.get(timeout=LIVENESS_S)
            except queue.Empty:
                raise AssertionError(f"still connected after {LIVENESS_S} s") from None
            if message is None:
                return
            if message.get("method") == "_rawtrio/event":
                self.events.append(message["params"]["event"])

    def start(self, place: Place, **params: Any) -> dict[str, Any]:
        full = {
            "cwd": str(place.iso.cwd),
            "env": place.client_env(),
            "flags": {},
            "choice": {},
            "headless": True,
            **params,
        }
        result: dict[str, Any] = self.result("_rawtrio/session/start", full)
        return result
