"""Drive the real `rawtrio` chat in a real terminal: a private tmux server per test.

The chat runs under `sh`, which records the terminal's settings (`stty -a`) before and
after it and the exit status, so a test can check the terminal was restored. Tests wait
on screen contents (`wait_for`), bounded by `LIVENESS_S` — never on fixed sleeps.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.headless.support import LIVENESS_S, Isolation, alive, is_watchdog, rawtrio_argv

COLUMNS, ROWS = 110, 40


def require_tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is required for the terminal chat tests (make test installs it)")
        pytest.skip("tmux is not installed")
    return found


@dataclass
class Pane:
    """One chat in a tmux pane of its own tmux server."""

    tmux: str
    socket: Path
    root: Path
    name: str

    @classmethod
    def start(
        cls, iso: Isolation, *args: str, env: Mapping[str, str] | None = None, name: str = "chat"
    ) -> Pane:
        tmux = require_tmux()
        full_env = iso.env(env)
        full_env["TERM"] = "xterm-256color"
        # A socket path must stay short (108 bytes), and pytest's tmp_path can be long.
        socket = Path(tempfile.mkdtemp(prefix="rtui-")) / "tmux.sock"
        conf = iso.root / "tmux.conf"
        conf.write_text("set -g remain-on-exit on\nset -g history-limit 5000\n")
        marks = iso.root / name
        marks.mkdir(exist_ok=True)
        command = shlex.join(rawtrio_argv(*args))
        script = (
            f"stty -a > {marks}/stty-before; {command}; code=$?; stty -a > {marks}/stty-after; "
            f"echo $code > {marks}/status.tmp; mv {marks}/status.tmp {marks}/status; "
            "echo CHAT-ENDED"
        )
        subprocess.run(
            [
                tmux,
                "-S",
                str(socket),
                "-f",
                str(conf),
                "new-session",
                "-d",
                "-x",
                str(COLUMNS),
                "-y",
                str(ROWS),
                "-c",
                str(iso.cwd),
                "-s",
                name,
                "sh",
                "-c",
                script,
            ],
            env=full_env,
            check=True,
            timeout=LIVENESS_S,
        )
        return cls(tmux, socket, marks, name)

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=LIVENESS_S,
        )
        return done.stdout

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-J", "-t", self.name)

    def scrollback(self) -> str:
        """The screen and what scrolled off it."""
        return self._run("capture-pane", "-p", "-J", "-S", "-1000", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self._run("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self._run("send-keys", "-t", self.name, "-l", text)

    def wait_for(self, text: str | Callable[[str], bool], what: str = "") -> str:
        """The screen once it shows `text` (or satisfies the predicate)."""
        check = text if callable(text) else (lambda screen: text in screen)
        deadline = time.monotonic() + LIVENESS_S
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            ended = not callable(text) and (self.root / "status").exists()
            if ended or time.monotonic() > deadline:
                raise AssertionError(
                    f"{'the chat ended first; ' if ended else ''}"
                    f"not on screen within {LIVENESS_S} s: {what or text!r}\n--- screen ---\n"
                    f"{screen}\n--- tui.log ---\n{self.log()}"
                )
            time.sleep(0.05)

    def shell_pid(self) -> int:
        return int(self._run("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def chat_process(self) -> psutil.Process:
        """The rawtrio process (the pane's shell's child), once it runs."""
        shell = psutil.Process(self.shell_pid())
        deadline = time.monotonic() + LIVENESS_S
        while not shell.children():
            if time.monotonic() > deadline:
                raise AssertionError("rawtrio did not start")
            time.sleep(0.02)
        return shell.children()[0]

    def wait_ended(self) -> int:
        """Wait for the chat to exit; its exit status."""
        self.wait_for(lambda _: (self.root / "status").exists(), "the chat exits")
        return int((self.root / "status").read_text().strip())

    def stty(self) -> tuple[str, str]:
        return (self.root / "stty-before").read_text(), (self.root / "stty-after").read_text()

    def log(self) -> str:
        path = self.root.parent / "home" / ".local" / "state" / "rawtrio" / "tui.log"
        return path.read_text() if path.exists() else "(no tui.log)"

    def close(self) -> None:
        subprocess.run(
            [self.tmux, "-S", str(self.socket), "kill-server"],
            capture_output=True,
            check=False,
            timeout=LIVENESS_S,
        )
        shutil.rmtree(self.socket.parent, ignore_errors=True)


def descendants_of(proc: psutil.Process) -> list[psutil.Process]:
    """The processes below `proc`, without rawtrio's watchdog (not a tool's process)."""
    try:
        return [p for p in alive(proc.children(recursive=True)) if not is_watchdog(p)]
    except psutil.NoSuchProcess:
        return []
