"""Errors name the URL called (without secrets), and a stalled stream is told apart from a
request timeout: the real SDKs against the fake model server."""

from __future__ import annotations

import socket

import pytest

from rawtrio.errors import AuthenticationFailed, ConnectionFailed, RequestTimedOut, StreamStalled
from rawtrio.messages import ProviderKind, UserMessage
from rawtrio.testing.fake_model import open_fake_model_server
from tests.providers.support import (
    KINDS,
    collect,
    collect_until_error,
    open_provider,
    request,
    scenario,
)

PATHS: dict[ProviderKind, str] = {
    "anthropic": "/v1/messages",
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
}


def free_port() -> int:
    with socket.socket() as sock:  # free a moment ago: nobody listens
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("kind", KINDS)
async def test_a_refused_connection_names_the_url(kind: ProviderKind) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}" + ("" if kind == "anthropic" else "/v1")
    async with (
        open_fake_model_server(scenario({"text": "x"})) as server,
        open_provider(kind, server, base_url=base) as provider,
    ):
        with pytest.raises(ConnectionFailed) as caught:
            await collect(provider, request(UserMessage("hi")))
    assert f"could not reach http://127.0.0.1:{port}{PATHS[kind]} (" in str(caught.value)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_refused_key_names_the_status_and_the_url(kind: ProviderKind) -> None:
    async with (
        open_fake_model_server(scenario({"error": {"status": 401}})) as server,
        open_provider(kind, server) as provider,
    ):
        with pytest.raises(AuthenticationFailed) as caught:
            await collect(provider, request(UserMessage("hi")))
    assert f"(401 from http://127.0.0.1:{server.port}{PATHS[kind]})" in str(caught.value)


async def test_the_url_in_an_error_carries_no_user_info_or_query() -> None:
    port = free_port()
    base = f"http://user:hunter2@127.0.0.1:{port}/v1?api-key=sekrit"
    async with (
        open_fake_model_server(scenario({"text": "x"})) as server,
        open_provider("openai-chat", server, base_url=base) as provider,
    ):
        with pytest.raises(ConnectionFailed) as caught:
            await collect(provider, request(UserMessage("hi")))
    message = str(caught.value)
    assert f"http://127.0.0.1:{port}/v1/chat/completions" in message
    assert "hunter2" not in message
    assert "sekrit" not in message


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stream_silent_for_the_idle_timeout_is_stalled(kind: ProviderKind) -> None:
    reply = {"text": "a reply that stops coming", "chunk": 3, "stall_after": 4}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server, stream_idle_timeout_s=0.3) as provider,
    ):
        with pytest.raises(StreamStalled) as caught:
            await collect_until_error(provider, request(UserMessage("hi")))
    assert "for 0.3 s (stream_idle_timeout_s)" in str(caught.value)
    assert f"http://127.0.0.1:{server.port}{PATHS[kind]}" in str(caught.value)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_slow_stream_that_keeps_sending_is_not_stalled(kind: ProviderKind) -> None:
    # 150 ms between events, idle timeout 0.5 s: the whole reply takes well over 0.5 s.
    reply = {"text": "slow but steady reply", "chunk": 4, "delay_ms": 150}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server, stream_idle_timeout_s=0.5) as provider,
    ):
        _, done = await collect(provider, request(UserMessage("hi")))
    assert done.message.text == "slow but steady reply"


async def test_a_request_timeout_is_not_called_a_stall() -> None:
    reply = {"text": "never", "stall_after": 0}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider("anthropic", server, request_timeout_s=0.3) as provider,
    ):
        with pytest.raises(RequestTimedOut) as caught:
            await collect_until_error(provider, request(UserMessage("hi")))
    assert "(request_timeout_s)" in str(caught.value)
