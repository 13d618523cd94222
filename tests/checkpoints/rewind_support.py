"""Three turns that change a project, for the rewind tests (chat, command line, ACP)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rawtrio.store.sqlite import SqliteStore
from tests.checkpoints.helpers import call
from tests.conftest import session_on

if TYPE_CHECKING:
    from rawtrio.runtime.session import Session

PROMPTS = ("first change", "second change", "third change")


def scenario_three_turns() -> dict[str, Any]:
    """Turn 1 writes a file; turn 2 edits it, makes a script executable and adds a folder
    (bash); turn 3 removes a file and rewrites another (bash)."""
    second_bash = "chmod 755 run.sh && mkdir -p new/dir && printf 'two\\n' > new/dir/t.txt"
    return {
        "rules": [
            {
                "match": "first change",
                "replies": [
                    {"tool_calls": [call("write_file", path="a.txt", content="one\n")]},
                    {"text": "wrote a.txt"},
                ],
            },
            {
                "match": "second change",
                "replies": [
                    {
                        "tool_calls": [
                            call("edit_file", path="a.txt", old_text="one", new_text="ONE"),
                            call("bash", command=second_bash),
                        ]
                    },
                    {"text": "changed a.txt and run.sh"},
                ],
            },
            {
                "match": "third change",
                "replies": [
                    {"tool_calls": [call("bash", command="rm keep.txt && echo 3 >> a.txt")]},
                    {"text": "removed keep.txt"},
                ],
            },
            {"match": "*", "replies": [{"text": "ok"}]},
        ]
    }


def make_small_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "keep.txt").write_bytes(b"\x00keep\xff\n")
    (root / "run.sh").write_bytes(b"#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o640)
    return root


@contextlib.asynccontextmanager
async def stored_session(project: Path, state: Path) -> AsyncIterator[tuple[SqliteStore, Session]]:
    """A session of `scenario_three_turns` open in this process (its writer lease held),
    stored in `state`'s SQLite store with its checkpoints beside it, as rawtrio keeps them."""
    async with (
        SqliteStore(state / "sessions.db") as store,
        session_on(
            scenario_three_turns(),
            "anthropic",
            project,
            store=store,
            checkpoint_dir=state / "checkpoints",
        ) as (session, _server, _runtime),
    ):
        yield store, session
