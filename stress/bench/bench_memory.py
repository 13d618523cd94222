"""Memory of a long-running ACP server: RSS growth over sessions opened, prompted, closed.

A real `rawtrio acp --ws` (its own process, an isolated state directory) against the fake
model server; one WebSocket connection runs `session/new` → `session/prompt` →
`session/close` `runs` times (default 1,000). The server's RSS (`/proc/<pid>/status`
VmRSS) is read after the first 50 sessions (the baseline: imports, caches and pools are
warm by then) and after the last; the figure is the growth, against docs/benchmarks.md's
"≤ 20 MB over 1,000 sessions", and the note gives it per session (the slope, to compare
shorter runs: `python -m stress.bench --only memory --runs 300` runs 300 sessions). Also
reported: lease files left in the state directory (0 expected: a closed session's lease
file is removed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio
from trio_websocket import open_websocket_url

from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from stress.acp_ws import Client, Stats, drain, first_line
from stress.bench.common import Figure, Options

DEFAULT_RUNS = 1000
BASELINE = 50
#: Under --smoke: the baseline and one session more (the figure means nothing then).
SMOKE_RUNS = BASELINE + 1
TARGET_MB = 20.0
SCENARIO = {"rules": [{"match": "*", "replies": [{"text": "ok"}]}]}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def run(options: Options) -> list[Figure]:
    sessions = max(options.runs, BASELINE + 1)
    with tempfile.TemporaryDirectory(prefix="rawtrio-bench-memory-") as tmp:
        root = Path(tmp)
        cwd = root / "work"
        cwd.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAWTRIO_", "XDG_"))}
        env.update(
            HOME=str(root),
            RAWTRIO_STATE_DIR=str(root / "state"),
            XDG_CONFIG_HOME=str(root / "config"),
            ANTHROPIC_API_KEY="bench",
            RAWTRIO_PERMISSION_MODE="bypass",
        )
        async with open_fake_model_server(Scenario.from_dict(SCENARIO)) as server:
            argv = [sys.executable, "-m", "rawtrio", "acp", "--ws", "--base-url", server.base_url]
            proc = await trio.lowlevel.open_process(
                argv, env=env, cwd=cwd, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
            )
            try:
                assert proc.stderr is not None
                info = json.loads(await first_line(proc.stderr))
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(drain, proc.stderr)
                    baseline, final = await _sessions(info, str(cwd), proc.pid, sessions)
                    nursery.cancel_scope.cancel(reason="measured")
            finally:
                proc.terminate()
                with trio.move_on_after(60):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        leases = root / "state" / "sessions.db.leases"
        left = len(list(leases.iterdir())) if leases.exists() else 0
    growth = final - baseline
    slope_kb = growth * 1024 / (sessions - BASELINE)
    note = (
        f"{sessions} sessions over one WebSocket; RSS {baseline:.0f} -> {final:.0f} MB"
        f" ({slope_kb:.1f} kB per session)"
    )
    return [
        Figure.against(
            f"ACP server RSS growth, sessions {BASELINE} -> {sessions}",
            growth,
            "MB",
            TARGET_MB,
            note,
        ),
        Figure.against("lease files left after the sessions closed", left, "files", 0),
    ]


async def _sessions(info: dict[str, Any], cwd: str, pid: int, count: int) -> tuple[float, float]:
    headers = [(b"authorization", f"Bearer {info['token']}".encode())]
    baseline = 0.0
    async with (
        open_websocket_url(info["acp_ws"], extra_headers=headers) as ws,
        trio.open_nursery() as nursery,
    ):
        client = Client(ws, "bench", Stats())
        nursery.start_soon(client.reader)
        await client.call("initialize", {"protocolVersion": 1})
        for n in range(1, count + 1):
            sid = (await client.call("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]
            prompt = [{"type": "text", "text": f"hello {n}"}]
            await client.call("session/prompt", {"sessionId": sid, "prompt": prompt})
            await client.call("session/close", {"sessionId": sid})
            if n == BASELINE:
                baseline = rss_mb(pid)
        final = rss_mb(pid)
        nursery.cancel_scope.cancel(reason="measured")
    return baseline, final
