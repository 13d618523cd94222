"""Shared helpers: a provider of each kind pointed at the fake model server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from rawtrio.frozen import freeze
from rawtrio.messages import Message, ProviderKind
from rawtrio.providers import make_provider
from rawtrio.providers.base import (
    ModelRequest,
    Provider,
    ProviderSettings,
    StreamDone,
    StreamEvent,
    ToolSpec,
)
from rawtrio.testing.fake_model import FakeModelServer, Scenario

KINDS: tuple[ProviderKind, ...] = ("anthropic", "openai-chat", "openai-responses")

BASH = ToolSpec(
    "bash",
    "Run a shell command.",
    freeze({"type": "object", "properties": {"command": {"type": "string"}}}),
)


def scenario(*replies: dict[str, Any], match: str = "*") -> Scenario:
    return Scenario.from_dict({"rules": [{"match": match, "replies": list(replies)}]})


def settings(kind: ProviderKind, server: FakeModelServer, **overrides: Any) -> ProviderSettings:
    base_url = server.base_url if kind == "anthropic" else server.openai_base_url
    values: dict[str, Any] = {"api_key": "test-key", "base_url": base_url, "max_retries": 0}
    values.update(overrides)
    return ProviderSettings(kind=kind, model="fake-model", **values)


def request(*messages: Message, tools: tuple[ToolSpec, ...] = (BASH,)) -> ModelRequest:
    return ModelRequest(
        system="You are a test.",
        messages=messages,
        tools=tools,
        model="fake-model",
        max_tokens=2048,
    )


@asynccontextmanager
async def open_provider(
    kind: ProviderKind, server: FakeModelServer, **overrides: Any
) -> AsyncIterator[Provider]:
    provider = make_provider(settings(kind, server, **overrides))
    try:
        yield provider
    finally:
        await provider.aclose()


async def collect(provider: Provider, req: ModelRequest) -> tuple[list[StreamEvent], StreamDone]:
    """All events of one request; the last must be `StreamDone`."""
    events: list[StreamEvent] = []
    async with provider.stream(req) as stream:
        async for event in stream:
            events.append(event)
    done = events[-1]
    assert isinstance(done, StreamDone), events
    return events[:-1], done


async def collect_until_error(
    provider: Provider, req: ModelRequest, events: list[StreamEvent] | None = None
) -> None:
    """Read the stream into `events`; the caller expects it to raise."""
    received = [] if events is None else events
    async with provider.stream(req) as stream:
        async for event in stream:
            received.append(event)
