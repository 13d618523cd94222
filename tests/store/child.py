"""A separate rawtrio process for the lease and crash tests (`python -m tests.store.child`).

- `hold DB SESSION`: take the writer lease of SESSION, print `ready`, sleep until killed.
- `turn DB CWD KILL_AT`: run one scripted turn through the real runtime, OpenAI SDK and fake
  model server on a `SqliteStore`, and `kill -9` itself at store operation number
  KILL_AT (`before` or `after` it runs). With KILL_AT 0 it finishes and prints how many
  operations there were (`w` a write the runtime awaits, `e` a display event), so the
  parent knows every point it can kill at.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from rawtrio.events import Event
from rawtrio.messages import Message
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.tools.settings import ToolSettings

SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "go",
            "replies": [
                {
                    "text": "Running both.",
                    "tool_calls": [
                        {"name": "bash", "arguments": {"command": "echo one >> runs.txt"}},
                        {"name": "bash", "arguments": {"command": "echo two >> runs.txt"}},
                    ],
                },
                {"text": "Both ran."},
            ],
        },
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


def options(cwd: Path, base_url: str) -> SessionOptions:
    provider = ProviderSettings(
        kind="openai-chat", model="test-model", api_key="k", base_url=base_url, max_retries=0
    )
    return SessionOptions(
        cwd=cwd, provider=provider, tools=ToolSettings(sigterm_grace_s=0.2, bash_timeout_s=30)
    )


class CrashingStore(SqliteStore):
    """Kills its own process with SIGKILL at one numbered store operation."""

    def __init__(self, path: Path, kill_at: int, when: str) -> None:
        super().__init__(path)
        self.count = 0
        self.kinds: list[str] = []
        self.kill_at = kill_at
        self.when = when

    def _point(self, phase: str, kind: str = "e") -> None:
        if phase == "before":
            self.count += 1
            self.kinds.append(kind)
        if self.count == self.kill_at and phase == self.when:
            os.kill(os.getpid(), signal.SIGKILL)

    async def begin_turn(self, session_id: str, turn_id: str, request_id: str | None) -> None:
        self._point("before", "w")
        await super().begin_turn(session_id, turn_id, request_id)
        self._point("after")

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        self._point("before", "w")
        await super().commit(session_id, turn_id, messages)
        self._point("after")

    async def mark_call_started(self, session_id: str, turn_id: str, call_id: str) -> None:
        self._point("before", "w")
        await super().mark_call_started(session_id, turn_id, call_id)
        self._point("after")

    async def end_turn(self, session_id: str, turn_id: str, outcome: Any, reason: str) -> None:
        self._point("before", "w")
        await super().end_turn(session_id, turn_id, outcome, reason)
        self._point("after")

    def record_event(self, event: Event) -> None:
        self._point("before")
        super().record_event(event)
        self._point("after")


async def run_turn(db: Path, cwd: Path, kill_at: int, when: str) -> None:
    store = CrashingStore(db, kill_at, when)
    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        store,
        open_runtime(store) as runtime,
    ):
        session = await runtime.create_session(options(cwd, server.openai_base_url))
        await session.run_turn("go")
    print(f"operations {''.join(store.kinds)}", flush=True)


async def hold(db: Path, session_id: str) -> None:
    async with SqliteStore(db) as store:
        await store.open_for_write(session_id)
        print("ready", flush=True)
        await trio.sleep_forever()


def main() -> None:
    mode, db = sys.argv[1], Path(sys.argv[2])
    if mode == "hold":
        trio.run(hold, db, sys.argv[3])
    else:
        trio.run(run_turn, db, Path(sys.argv[3]), int(sys.argv[4]), sys.argv[5])


if __name__ == "__main__":
    main()
