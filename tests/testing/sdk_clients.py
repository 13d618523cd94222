"""Helpers for the fake model server tests: real SDK clients pointed at a server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import openai

from rawtrio.testing.fake_model import FakeModelServer, Scenario


def one_reply(**reply: Any) -> Scenario:
    """A scenario answering every conversation with `reply` first."""
    return Scenario.from_dict({"rules": [{"match": "*", "replies": [reply]}]})


@asynccontextmanager
async def anthropic_client(server: FakeModelServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="x", max_retries=0)
    async with client:
        yield client


@asynccontextmanager
async def openai_client(server: FakeModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="x", max_retries=0)
    async with client:
        yield client
