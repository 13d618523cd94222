"""Fixtures: each store-behaviour test runs against the durable and the in-memory store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rawtrio.store.base import SessionRecord, SessionStore
from rawtrio.store.memory import MemoryStore
from rawtrio.store.sqlite import SqliteStore


@pytest.fixture(params=["sqlite", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    async with SqliteStore(tmp_path / "sessions.db") as s:
        yield s


async def new_session(
    store: SessionStore, session_id: str = "s1", cwd: str = "/work", title: str = ""
) -> SessionRecord:
    return await store.create_session(
        session_id=session_id,
        cwd=cwd,
        system_prompt="You are a test.",
        provider="anthropic",
        model="test-model",
        title=title,
    )
