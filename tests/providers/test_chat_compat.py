"""OpenAI-compatible servers through the Chat Completions adapter."""

from __future__ import annotations

import pytest

from rawtrio.messages import UserMessage
from rawtrio.testing.fake_model import open_fake_model_server
from tests.providers.support import collect, open_provider, request, scenario


async def test_chat_sends_max_tokens_to_a_compatible_server_named_by_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: a server named by OPENAI_BASE_URL (not --base-url) got OpenAI's own
    `max_completion_tokens`, which compatible servers (vLLM, llama.cpp, …) do not know."""
    async with open_fake_model_server(scenario({"text": "ok"})) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        async with open_provider("openai-chat", server, base_url=None) as provider:
            await collect(provider, request(UserMessage("hi")))
    body = server.requests[0].body
    assert body["max_tokens"] == 2048
    assert "max_completion_tokens" not in body
