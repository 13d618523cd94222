"""The terminal chat: start-up, keypress → "cancelling…" on screen, streamed-text rendering
with a long history, and idle RSS.

The chat is the real program (`rawtrio` with `ANTHROPIC_BASE_URL` pointing at an
in-process fake model server) on a pseudo-terminal of 120×40 opened by this benchmark,
which reads what the chat writes to the terminal. Figures:

- **start → prompt drawn** — from spawning `rawtrio` to the first frame that shows the
  prompt (`›`); median of `runs` starts (each chat waits until its session is open, then
  leaves, so no start competes with the previous chat's boot). Target 300 ms
  (docs/benchmarks.md: the runtime and the SDK are imported after the first frame, so
  this does not wait for them). The machine's load average is given with it.
- **Ctrl-C → "cancelling…" visible** — per run, a prompt starts a tool (`sleep 60`); once
  its line says "running", the byte Ctrl-C is written to the terminal and the clock stops
  when the terminal output contains "cancelling…". Median and p99 of `runs` cancels (one
  chat, one turn each). No separate budget; judged against the 100 ms cancel
  p99 budget, since the user sees nothing sooner than this.
- **Ctrl-C → outcome visible** — the same clock, stopped when "turn cancelled" is drawn
  (the turn's terminal event, after the tool's process group was ended: SIGTERM grace
  0.2 s for `sleep`, which exits on SIGTERM at once).
- **streamed text with a 10,000-message history** — in-process: the transcript holds
  10,000 messages, then 2,000 text deltas of 8 characters (bold spans cut across deltas,
  a paragraph every 40 deltas) are applied one by one to a new reply and the visible list
  box is rendered after every delta (the worst case: one frame
  per delta; the chat draws at most one frame per trio I/O wait). Deltas per second.
- **idle RSS** — VmRSS of the chat process at an idle prompt after one completed turn
  (SDK and runtime loaded). Target 100 MB.

The chat runs with bytecode caches written and used (the benchmark's own
`PYTHONDONTWRITEBYTECODE` is not passed on; rawtrio's are compiled first), as after any
install.
"""

from __future__ import annotations

import fcntl
import os
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Final

import psutil
import trio

from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from stress.bench.common import Figure, Options, median, percentile

DEFAULT_RUNS: Final = 10
SMOKE_RUNS: Final = 1
START_TARGET_MS: Final = 300.0
CANCEL_VISIBLE_TARGET_MS: Final = 100.0
RSS_TARGET_MB: Final = 100.0
HISTORY: Final = 10_000
DELTAS: Final = 2_000
LIMIT_S: Final = 60.0

SCENARIO: Final = {
    "rules": [
        {
            "match": "sleep",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 60"}}]},
                {"text": "slept"},
            ],
        },
        {"match": "*", "replies": [{"text": "Hello **there**."}]},
    ]
}


class Terminal:
    """A chat process on a pty; `wait_for` reads its output until a text shows up."""

    def __init__(self, proc: trio.Process, master: int) -> None:
        self.proc = proc
        self.stream = trio.lowlevel.FdStream(master)
        self.seen = b""

    async def wait_for(self, text: str) -> float:
        """The time (monotonic) at which `text` was first read from the terminal."""
        needle = text.encode()
        now = time.monotonic()
        with trio.fail_after(LIMIT_S):
            while True:
                found = self.seen.find(needle)
                if found != -1:  # output after it is kept for the next wait
                    self.seen = self.seen[found + len(needle) :]
                    return now
                chunk = await self.stream.receive_some(65536)
                if not chunk:
                    raise RuntimeError(f"the chat ended before showing {text!r}")
                now = time.monotonic()
                self.seen += chunk

    async def send(self, data: bytes) -> float:
        sent = time.monotonic()
        await self.stream.send_all(data)
        return sent


async def open_chat(env: dict[str, str], cwd: Path) -> tuple[Terminal, float]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    started = time.monotonic()
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "rawtrio", "--sigterm-grace", "0.2"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    os.close(slave)
    return Terminal(proc, master), started


def chat_env(base_url: str, scratch: Path) -> dict[str, str]:
    # Bytecode caches written and used, as after an install (see `compile_rawtrio`).
    prefixes = ("ANTHROPIC_", "OPENAI_", "RAWTRIO_", "XDG_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(
        ANTHROPIC_API_KEY="test-key",
        ANTHROPIC_BASE_URL=base_url,
        RAWTRIO_MODEL="test-model",
        RAWTRIO_PERMISSION_MODE="bypass",
        RAWTRIO_STATE_DIR=str(scratch / "state"),
        XDG_CONFIG_HOME=str(scratch / "config"),
        HOME=str(scratch),
        TERM="xterm-256color",
    )
    return env


def compile_rawtrio() -> None:
    """Write rawtrio's bytecode caches before the first start, as an install does (an
    editable install writes them on the first run, which is not measured here)."""
    import compileall

    import rawtrio

    compileall.compile_dir(Path(rawtrio.__file__).parent, quiet=1)


async def measure_chat(
    runs: int, scratch: Path
) -> tuple[list[float], list[float], list[float], float]:
    """(start ms per start, cancel-visible ms, outcome-visible ms, idle RSS MB)."""
    starts: list[float] = []
    visible: list[float] = []
    outcome: list[float] = []
    rss_mb = 0.0
    cwd = scratch / "work"
    cwd.mkdir()
    async with open_fake_model_server(Scenario.from_dict(SCENARIO)) as server:
        env = chat_env(server.base_url, scratch)
        for n in range(runs):
            term, spawned = await open_chat(env, cwd)
            try:
                starts.append((await term.wait_for("›") - spawned) * 1000)
                await term.wait_for("ready")
                if n == 0:
                    await term.send(b"hello\r")
                    await term.wait_for("there")
                    await term.wait_for("ready")
                    await trio.sleep(0.5)  # let it settle to idle
                    rss_mb = psutil.Process(term.proc.pid).memory_info().rss / 2**20
                    for _ in range(runs):
                        await term.send(b"sleep\r")
                        await term.wait_for("running")
                        pressed = await term.send(b"\x03")
                        visible.append((await term.wait_for("cancelling") - pressed) * 1000)
                        outcome.append((await term.wait_for("turn cancelled") - pressed) * 1000)
                        await term.wait_for("ready")
                await term.send(b"\x03")
                await term.send(b"\x03")
                with trio.fail_after(LIMIT_S):
                    await term.proc.wait()
            finally:
                if term.proc.returncode is None:
                    term.proc.kill()
                    await term.proc.wait()
                await term.stream.aclose()
    return starts, visible, outcome, rss_mb


def streaming_throughput(history: int = HISTORY, deltas: int = DELTAS) -> float:
    """Deltas per second rendered with a long history (see the module docstring)."""
    from rawtrio import events as ev
    from rawtrio.tui.blocks import Transcript

    transcript = Transcript()
    for n in range(history):
        transcript.apply(ev.UserMessageCommitted(session_id="s", seq=n + 1, text=f"message {n}"))
    started = time.perf_counter()
    canvas = None  # the screen keeps the last frame, which keeps urwid's canvas cache alive
    for n in range(deltas):
        text = "word **b" if n % 2 else ("old**\n\n" if n % 40 == 0 else "old** x ")
        transcript.apply(ev.TextDelta(session_id="s", turn_id="t", step=1, text=text))
        canvas = transcript.listbox.render((120, 36))
    del canvas
    return deltas / (time.perf_counter() - started)


async def run(options: Options) -> list[Figure]:
    runs = options.runs
    history, deltas = options.size(HISTORY, 200), options.size(DELTAS, 100)
    await trio.to_thread.run_sync(compile_rawtrio)
    with tempfile.TemporaryDirectory(prefix="rawtrio-bench-tui-") as tmp:
        starts, visible, outcome, rss_mb = await measure_chat(runs, Path(tmp))
    rate = streaming_throughput(history, deltas)
    note = f"{runs} cancels in one chat"
    return [
        Figure.against(
            "start -> prompt drawn (median)",
            median(starts),
            "ms",
            START_TARGET_MS,
            f"{len(starts)} starts; min {min(starts):.0f}, max {max(starts):.0f} ms; "
            f"load {os.getloadavg()[0]:.1f}",
        ),
        Figure.against(
            "Ctrl-C -> 'cancelling…' visible (median)",
            median(visible),
            "ms",
            CANCEL_VISIBLE_TARGET_MS,
            note,
        ),
        Figure.against(
            "Ctrl-C -> 'cancelling…' visible (p99)",
            percentile(visible, 99),
            "ms",
            CANCEL_VISIBLE_TARGET_MS,
            note,
        ),
        Figure.against(
            "Ctrl-C -> turn outcome visible (median)",
            median(outcome),
            "ms",
            None,
            f"{note}; includes the tool's SIGTERM and reaping",
        ),
        Figure.against(
            f"streamed deltas rendered/s, {history:,}-message history",
            rate,
            "/s",
            None,
            f"{deltas} deltas, a frame rendered after each",
        ),
        Figure.against("idle RSS", rss_mb, "MB", RSS_TARGET_MB, "after one turn, at the prompt"),
    ]
