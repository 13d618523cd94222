"""`ClientPool`: one SDK client per endpoint and key, lent to providers, owned by the pool.

Real SDK clients against the fake model server; which clients exist is read from the
garbage collector's view of the process (every live SDK client pointing at the server)."""

from __future__ import annotations

import dataclasses

import pytest

from rawtrio.errors import NoCredentials
from rawtrio.messages import ProviderKind, UserMessage
from rawtrio.providers.base import Provider, ProviderSettings, StreamDone
from rawtrio.providers.clients import ClientKey, ClientPool
from rawtrio.testing.fake_model import open_fake_model_server
from tests.providers.sdk_clients import sdk_clients
from tests.providers.support import KINDS, request, scenario, settings


async def reply_text(provider: Provider, text: str = "hello") -> str:
    done = None
    async with provider.stream(request(UserMessage(text), tools=())) as events:
        async for event in events:
            if isinstance(event, StreamDone):
                done = event
    assert done is not None, "the stream ended without StreamDone"
    return done.message.text


@pytest.mark.parametrize("kind", KINDS)
async def test_providers_with_one_key_borrow_one_client_that_outlives_them(
    kind: ProviderKind,
) -> None:
    async with open_fake_model_server(scenario({"text": "ok"})) as server:
        pool = ClientPool(keep_idle=0)
        first = pool.provider(settings(kind, server))
        second = pool.provider(dataclasses.replace(settings(kind, server), model="other-model"))
        (client,) = sdk_clients(server)
        assert len(pool) == 1
        assert await reply_text(first) == "ok"
        await first.aclose()
        # The client is lent, not owned: the other borrower goes on streaming through it.
        assert not client.is_closed()
        assert await reply_text(second) == "ok"
        assert len({r.connection for r in server.requests}) == 1  # one kept-alive connection
        await second.aclose()
        # keep_idle=0: the last borrower gone, the pool closes the client.
        assert client.is_closed()
        assert len(pool) == 0
        await pool.aclose()


async def test_closing_a_provider_twice_returns_one_loan() -> None:
    async with open_fake_model_server(scenario({"text": "ok"})) as server:
        pool = ClientPool(keep_idle=0)
        first = pool.provider(settings("anthropic", server))
        second = pool.provider(settings("anthropic", server))
        await first.aclose()
        await first.aclose()
        (client,) = sdk_clients(server)
        assert not client.is_closed()
        assert await reply_text(second) == "ok"
        await second.aclose()
        assert client.is_closed()


async def test_each_key_gets_its_own_client_and_is_sent_only_by_it() -> None:
    async with open_fake_model_server(scenario({"text": "ok"})) as server:
        pool = ClientPool()
        one = pool.provider(settings("anthropic", server, api_key="key-one"))
        two = pool.provider(settings("anthropic", server, api_key="key-two"))
        assert len(pool) == 2
        assert len(sdk_clients(server)) == 2
        await reply_text(one)
        await reply_text(two)
        sent = [r.headers["authorization"] for r in server.requests]
        assert sent == ["Bearer key-one", "Bearer key-two"]
        await one.aclose()
        await two.aclose()
        await pool.aclose()
        assert all(c.is_closed() for c in sdk_clients(server))


def test_the_key_holds_everything_a_client_sends_and_nothing_a_request_carries() -> None:
    base = ProviderSettings(kind="anthropic", model="m", api_key="k", base_url="http://a/")
    key = ClientKey.of(base)
    # The model and extra body parameters travel with each request: same client.
    assert ClientKey.of(dataclasses.replace(base, model="other", extra={"top_k": 1})) == key
    # Retries are rawtrio's own policy (the SDK client never retries): same client.
    assert ClientKey.of(dataclasses.replace(base, max_retries=0)) == key
    for change in (
        {"kind": "openai-chat"},
        {"api_key": "k2"},
        {"base_url": "http://b/"},
        {"base_url": None},
        {"request_timeout_s": 5.0},
        {"stream_idle_timeout_s": 5.0},
        {"default_headers": {"x-org": "o"}},
    ):
        assert ClientKey.of(dataclasses.replace(base, **change)) != key, change
    assert "k" not in repr(key).replace("kind", "")  # the key never shows in a repr


async def test_idle_clients_beyond_keep_idle_are_closed_oldest_first() -> None:
    async with open_fake_model_server(scenario({"text": "ok"})) as server:
        pool = ClientPool(keep_idle=1)
        a = pool.provider(settings("anthropic", server, api_key="key-a"))
        b = pool.provider(settings("anthropic", server, api_key="key-b"))
        client_a, client_b = sorted(sdk_clients(server), key=lambda c: str(c.api_key))
        await a.aclose()
        assert not client_a.is_closed()  # idle, kept for the next session
        await b.aclose()
        assert client_a.is_closed()
        assert not client_b.is_closed()
        assert len(pool) == 1
        # Borrowing the kept key again reuses its client.
        again = pool.provider(settings("anthropic", server, api_key="key-b"))
        assert await reply_text(again) == "ok"
        assert [c for c in sdk_clients(server) if not c.is_closed()] == [client_b]
        await again.aclose()
        await pool.aclose()
        assert client_b.is_closed()


async def test_a_closed_pool_closes_its_clients_and_lends_no_more() -> None:
    async with open_fake_model_server(scenario({"text": "ok"})) as server:
        pool = ClientPool()
        lent = pool.provider(settings("openai-chat", server))
        (client,) = sdk_clients(server)
        await pool.aclose()
        assert client.is_closed()
        with pytest.raises(RuntimeError, match="closed"):
            pool.provider(settings("openai-chat", server))
        await lent.aclose()  # returning a loan after the pool closed is harmless
        assert len(pool) == 0


async def test_bad_settings_build_nothing() -> None:
    async with open_fake_model_server(scenario({"text": "ok"})) as server:
        pool = ClientPool()
        with pytest.raises(NoCredentials, match="ANTHROPIC_API_KEY"):
            pool.provider(settings("anthropic", server, api_key=""))
        assert len(pool) == 0
        assert sdk_clients(server) == []
