"""The real dashboard in a subprocess, and an HTTP client for it (httpx2 over loopback).

`Dashboard.start(iso, ...)` runs `rawtrio dashboard` (or takes the URL a host printed),
reads the URL with the token it printed once, and gives a client that sends the token
as `Authorization: Bearer`. `SseReader` follows an event stream on a thread and parses
the SSE messages, so a test can act while it watches.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from tests.headless.support import LIVENESS_S, Isolation, descendant_pids, rawtrio_argv

URL_LINE = re.compile(r"rawtrio dashboard: (http://127\.0\.0\.1:(\d+))/#token=([A-Za-z0-9_-]+)")
KEY = "sk-test-key-0123456789"


def dashboard_env(iso: Isolation, base_url: str, extra: Mapping[str, str] | None = None) -> Any:
    return iso.env(
        {
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": base_url,
            "RAWTRIO_STATE_DIR": str(iso.root / "state"),
            **(extra or {}),
        }
    )


@dataclass
class Dashboard:
    url: str
    port: int
    token: str
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    client: httpx2.Client = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx2.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=LIVENESS_S,
        )

    @classmethod
    def from_log(cls, log: Path, proc: subprocess.Popen[bytes] | None) -> Dashboard:
        """Wait for the URL line in `log` (liveness-bounded)."""
        deadline = time.monotonic() + LIVENESS_S
        while time.monotonic() < deadline:
            found = URL_LINE.search(log.read_text(errors="replace"))
            if found:
                return cls(found.group(1), int(found.group(2)), found.group(3), proc, log)
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"the dashboard exited {proc.returncode}: {log.read_text()}")
            time.sleep(0.05)
        raise AssertionError(f"no URL printed within {LIVENESS_S} s: {log.read_text()}")

    @classmethod
    def start(
        cls, iso: Isolation, base_url: str, *args: str, env: Mapping[str, str] | None = None
    ) -> Dashboard:
        log = iso.root / f"dashboard-{time.monotonic_ns()}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                rawtrio_argv("dashboard", *args),
                cwd=iso.cwd,
                env=dashboard_env(iso, base_url, env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        return cls.from_log(log, proc)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log else ""

    def stop(self) -> int:
        """SIGTERM, which it must survive cleanly (exit 0)."""
        self.client.close()
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=LIVENESS_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        assert self.proc is not None
        for pid in [self.proc.pid, *descendant_pids(self.proc.pid, with_watchdog=True)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=LIVENESS_S)

    # --- the API ---------------------------------------------------------------------

    def ok(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        """The JSON answer of a request that must succeed with `status`."""
        r = self.client.request(method, path, **kwargs)
        assert r.status_code == status, (r.status_code, r.text)
        return r.json() if r.content else None

    def new_session(self, cwd: Path | None = None, **body: Any) -> dict[str, Any]:
        if cwd is not None:
            body["cwd"] = str(cwd)
        return dict(self.ok("POST", "/api/sessions", 201, json=body))

    def submit(self, session_id: str, text: str, request_id: str | None = None) -> Any:
        body = {"client_request_id": request_id or str(uuid.uuid4()), "text": text}
        return self.ok("POST", f"/api/sessions/{session_id}/turns", 202, json=body)

    def wait_ended(self, operation_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + LIVENESS_S
        while time.monotonic() < deadline:
            receipt = self.ok("GET", f"/api/operations/{operation_id}")
            if receipt["status"] == "ended":
                return dict(receipt)
            time.sleep(0.05)
        raise AssertionError(f"operation {operation_id} did not end within {LIVENESS_S} s")

    def history(self, session_id: str) -> list[dict[str, Any]]:
        """The whole display history, oldest first, read page by page."""
        events: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"order": "oldest", "limit": 100}
            if cursor:
                params["cursor"] = cursor
            page = self.ok("GET", f"/api/sessions/{session_id}/history", params=params)
            events += page["events"]
            cursor = page["next_cursor"]
            if cursor is None:
                return events

    def stream(self, session_id: str, last_event_id: int | None = None) -> SseReader:
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        return SseReader(self.client, f"/api/sessions/{session_id}/events", headers)


@dataclass
class Message:
    event: str
    data: Any
    id: int | None
    raw: str


class SseReader:
    """An event stream read on a thread; `messages` in order of arrival."""

    def __init__(self, client: httpx2.Client, path: str, headers: Mapping[str, str]) -> None:
        self.messages: list[Message] = []
        self.raw: list[str] = []
        self._queue: queue.Queue[Message | None] = queue.Queue()
        self._seen = 0
        self.status: int | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._socket: socket.socket | None = None
        self._client = client
        self._path = path
        self._headers = dict(headers)
        self._thread = threading.Thread(target=self._run, daemon=True, name="sse reader")
        self._thread.start()
        if not self._ready.wait(LIVENESS_S):
            raise AssertionError("the event stream did not answer")
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            with self._client.stream("GET", self._path, headers=self._headers) as r:
                self.status = r.status_code
                stream = r.extensions.get("network_stream")
                self._socket = stream.get_extra_info("socket") if stream is not None else None
                self._ready.set()
                if r.status_code != 200:
                    r.read()
                    self.raw.append(r.text)
                    return
                fields: dict[str, str] = {}
                for line in r.iter_lines():
                    if self._stop.is_set():
                        return
                    self.raw.append(line)
                    if line == "":
                        if "event" in fields or "data" in fields:
                            self._queue.put(_message(fields))
                        fields = {}
                    elif not line.startswith(":"):
                        name, _, value = line.partition(":")
                        fields[name] = value.removeprefix(" ")
        except Exception as exc:
            if not self._stop.is_set():
                self.error = exc
        finally:
            self._ready.set()
            self._queue.put(None)

    def wait_for(self, predicate: Callable[[Message], bool], what: str = "") -> Message:
        """The first message (from where the last wait stopped) matching `predicate`."""
        deadline = time.monotonic() + LIVENESS_S
        while True:
            while self._seen < len(self.messages):
                msg = self.messages[self._seen]
                self._seen += 1
                if predicate(msg):
                    return msg
            try:
                msg_or_end = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                missing = what or "matching message"
                raise AssertionError(f"no {missing} within {LIVENESS_S} s") from None
            if msg_or_end is None:
                raise AssertionError(f"the stream ended before {what}: {self.error!r}")
            self.messages.append(msg_or_end)

    def wait_event(self, type_: str) -> Message:
        return self.wait_for(lambda m: m.event == type_, type_)

    def events(self) -> list[dict[str, Any]]:
        """The session events received so far (not hello/state/pings)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)
                break
            self.messages.append(item)
        return [m.data for m in self.messages if m.id is not None]

    def close(self) -> None:
        """Leave the stream as a page does: the connection goes away."""
        self._stop.set()
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.shutdown(socket.SHUT_RDWR)
        self._thread.join(LIVENESS_S)

    def __enter__(self) -> SseReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _message(fields: Mapping[str, str]) -> Message:
    data_text = fields.get("data", "")
    raw_id = fields.get("id")
    return Message(
        fields.get("event", "message"),
        json.loads(data_text) if data_text else None,
        int(raw_id) if raw_id is not None else None,
        data_text,
    )
