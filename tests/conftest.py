"""Shared fixtures: the fake model server with the real SDKs, and sessions on it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio.messages import ProviderKind
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.runtime import Runtime, open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.store.memory import MemoryStore
from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server
from rawtrio.tools.settings import ToolSettings

#: A liveness bound for one test's session (never a performance assert).
LIVENESS_S = 60

WIRES: tuple[ProviderKind, ...] = ("anthropic", "openai-chat", "openai-responses")


def requires(condition: bool, why: str) -> None:
    """Skip on a developer's machine when a prerequisite is missing; fail under CI=true."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"prerequisite missing under CI: {why}")
    pytest.skip(why)


def provider_for(server: FakeModelServer, wire: ProviderKind, **extra: Any) -> ProviderSettings:
    base = server.base_url if wire == "anthropic" else server.openai_base_url
    return ProviderSettings(
        kind=wire, model="test-model", api_key="test-key", base_url=base, max_retries=0, **extra
    )


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest) -> ProviderKind:
    value: ProviderKind = request.param
    return value


SessionFactory = Callable[..., Any]


@asynccontextmanager
async def session_on(
    scenario: dict[str, Any],
    wire: ProviderKind,
    cwd: Path,
    **options: Any,
) -> AsyncIterator[tuple[Session, FakeModelServer, Runtime]]:
    """A live session whose provider is the fake model server running `scenario`."""
    tools = options.pop("tools", ToolSettings(sigterm_grace_s=0.2, bash_timeout_s=30))
    store = options.pop("store", None) or MemoryStore()
    async with (
        open_fake_model_server(Scenario.from_dict(scenario)) as server,
        open_runtime(store) as runtime,
    ):
        session = await runtime.create_session(
            SessionOptions(cwd=cwd, provider=provider_for(server, wire), tools=tools, **options)
        )
        with trio.fail_after(LIVENESS_S):
            yield session, server, runtime
