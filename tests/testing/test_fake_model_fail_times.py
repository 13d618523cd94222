"""`fail_times` and `retry_after_ms`: faults that hit the first N requests only, through the
real SDKs (the retry tests and the stress suite's backoff scenario build on them)."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from tests.testing.sdk_clients import anthropic_client, openai_client

USER: Any = {"role": "user", "content": "hello"}


def failing_twice(**fault: Any) -> Scenario:
    reply = {"text": "made it", "fail_times": 2, **fault}
    return Scenario.from_dict({"rules": [{"match": "*", "replies": [reply]}]})


async def test_an_error_hits_the_first_n_requests_then_the_reply_is_served() -> None:
    scenario = failing_twice(error={"status": 529, "retry_after_ms": 250})
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        for _ in range(2):
            with pytest.raises(anthropic.OverloadedError) as info:
                await client.messages.create(model="m", max_tokens=10, messages=[USER])
            assert info.value.response.headers["retry-after-ms"] == "250"
        message = await client.messages.create(model="m", max_tokens=10, messages=[USER])
    assert [b.text for b in message.content if b.type == "text"] == ["made it"]
    assert [r.status for r in server.requests] == [529, 529, 200]


async def test_a_cut_hits_the_first_n_streams_then_the_reply_is_served() -> None:
    scenario = failing_twice(cut_after=2)
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:
        for _ in range(3):
            stream = await client.chat.completions.create(model="m", messages=[USER], stream=True)
            try:
                async for _chunk in stream:
                    pass
            except Exception:
                pass
            finally:
                await stream.close()
    assert [r.outcome for r in server.requests] == ["cut", "cut", "completed"]


async def test_set_scenario_starts_the_count_again() -> None:
    scenario = failing_twice(error={"status": 503})
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        with pytest.raises(anthropic.InternalServerError):
            await client.messages.create(model="m", max_tokens=10, messages=[USER])
        server.set_scenario(failing_twice(error={"status": 503}))
        for _ in range(2):
            with pytest.raises(anthropic.InternalServerError):
                await client.messages.create(model="m", max_tokens=10, messages=[USER])
        await client.messages.create(model="m", max_tokens=10, messages=[USER])
    assert [r.status for r in server.requests] == [503, 503, 503, 200]
