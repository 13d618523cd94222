"""Each adapter, through its real SDK: how failures surface, and that leaving closes the stream."""

from __future__ import annotations

import socket

import pytest
import trio

from rawtrio.contracts import ToolStatus
from rawtrio.errors import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    MalformedStream,
    Overloaded,
    ProviderError,
    RateLimited,
    RequestTimedOut,
    ServerFailed,
    StreamCut,
)
from rawtrio.messages import ProviderKind, ToolResult, UserMessage
from rawtrio.providers.base import StreamEvent, TextDelta
from rawtrio.testing.fake_model import open_fake_model_server
from tests.providers.support import (
    KINDS,
    collect,
    collect_until_error,
    open_provider,
    request,
    scenario,
)

#: Liveness bound for waits on the server (≥ 10× the budget, not a timing assert).
LIVENESS_S = 10

STATUS_CASES: list[tuple[int, type[ProviderError]]] = [
    (400, BadRequest),
    (401, AuthenticationFailed),
    (403, AuthenticationFailed),
    (404, BadRequest),
    (422, BadRequest),
    (429, RateLimited),
    (500, ServerFailed),
    (503, ServerFailed),
    (529, Overloaded),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("status", "expected"), STATUS_CASES)
async def test_error_status_maps_to_its_error_class(
    kind: ProviderKind, status: int, expected: type[ProviderError]
) -> None:
    error = {"status": status, "message": f"scripted failure {status}"}
    async with (
        open_fake_model_server(scenario({"error": error})) as server,
        open_provider(kind, server) as provider,
    ):
        with pytest.raises(expected) as caught:
            await collect(provider, request(UserMessage("hi")))
    assert type(caught.value) is expected
    assert caught.value.status == status
    assert f"scripted failure {status}" in str(caught.value)
    assert len(server.requests) == 1  # max_retries=0: the SDK did not retry


@pytest.mark.parametrize("kind", KINDS)
async def test_rate_limit_carries_retry_after(kind: ProviderKind) -> None:
    error = {"status": 429, "retry_after": 7}
    async with (
        open_fake_model_server(scenario({"error": error})) as server,
        open_provider(kind, server) as provider,
    ):
        with pytest.raises(RateLimited) as caught:
            await collect(provider, request(UserMessage("hi")))
    assert caught.value.retry_after == 7


@pytest.mark.parametrize("kind", KINDS)
async def test_refused_transcript_is_bad_request_with_the_service_message(
    kind: ProviderKind,
) -> None:
    stray = ToolResult("call_nowhere", "bash", ToolStatus.OK, "orphan")
    async with (
        open_fake_model_server(scenario({"text": "x"})) as server,
        open_provider(kind, server) as provider,
    ):
        with pytest.raises(BadRequest) as caught:
            await collect(provider, request(UserMessage("hi"), stray))
    assert server.requests[0].error is not None
    assert server.requests[0].error in str(caught.value)


IN_STREAM_ERRORS: dict[ProviderKind, tuple[str, type[ProviderError]]] = {
    "anthropic": ("overloaded_error", Overloaded),
    "openai-chat": ("server_error", ServerFailed),
    "openai-responses": ("rate_limit_exceeded", RateLimited),
}


@pytest.mark.parametrize("kind", KINDS)
async def test_error_inside_the_stream_maps_by_its_type(kind: ProviderKind) -> None:
    error_type, expected = IN_STREAM_ERRORS[kind]
    error = {"status": 500, "type": error_type, "message": "midway failure", "after": 4}
    reply = {"text": "some text that streams first", "chunk": 3, "error": error}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server) as provider,
    ):
        with pytest.raises(expected, match="midway failure"):
            await collect_until_error(provider, request(UserMessage("hi")))


@pytest.mark.parametrize("kind", KINDS)
async def test_stream_cut_midway_is_stream_cut(kind: ProviderKind) -> None:
    reply = {"text": "a reply long enough to be cut", "chunk": 3, "cut_after": 5}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server) as provider,
    ):
        events: list[StreamEvent] = []
        with pytest.raises(StreamCut):
            await collect_until_error(provider, request(UserMessage("hi")), events)
    assert any(isinstance(e, TextDelta) for e in events)


@pytest.mark.parametrize("kind", KINDS)
async def test_malformed_event_is_malformed_stream(kind: ProviderKind) -> None:
    reply = {"text": "a reply with a bad event inside", "chunk": 3, "malformed_after": 4}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server) as provider,
    ):
        with pytest.raises(MalformedStream):
            await collect_until_error(provider, request(UserMessage("hi")))


@pytest.mark.parametrize("kind", KINDS)
async def test_stalled_stream_times_out(kind: ProviderKind) -> None:
    reply = {"text": "a reply that stops coming", "chunk": 3, "stall_after": 7}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server, request_timeout_s=0.3) as provider,
    ):
        with pytest.raises(RequestTimedOut):
            await collect_until_error(provider, request(UserMessage("hi")))


@pytest.mark.parametrize("kind", KINDS)
async def test_unreachable_server_is_connection_failed(kind: ProviderKind) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nobody listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with open_fake_model_server(scenario({"text": "x"})) as server:
        base = f"http://127.0.0.1:{port}" + ("" if kind == "anthropic" else "/v1")
        async with open_provider(kind, server, base_url=base) as provider:
            with pytest.raises(ConnectionFailed):
                await collect(provider, request(UserMessage("hi")))


@pytest.mark.parametrize("kind", KINDS)
async def test_cancelling_mid_stream_closes_the_connection(kind: ProviderKind) -> None:
    reply = {"text": "a reply that never finishes", "chunk": 3, "stall_after": 7}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server) as provider,
    ):
        got_text = False
        with trio.CancelScope() as scope:
            async with provider.stream(request(UserMessage("hi"))) as stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        got_text = True
                        scope.cancel(reason="test cancels mid-stream")
        assert got_text
        assert scope.cancelled_caught
        with trio.fail_after(LIVENESS_S):
            await server.wait_for_disconnect()
        assert server.requests[0].disconnected
        # The client is still usable afterwards.
        server.set_scenario(scenario({"text": "again"}))
        _, done = await collect(provider, request(UserMessage("hi")))
        assert done.message.text == "again"


@pytest.mark.parametrize("kind", KINDS)
async def test_leaving_the_block_early_closes_the_connection(kind: ProviderKind) -> None:
    reply = {"text": "a reply that never finishes", "chunk": 3, "stall_after": 7}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server) as provider,
    ):
        async with provider.stream(request(UserMessage("hi"))) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    break
        with trio.fail_after(LIVENESS_S):
            await server.wait_for_disconnect()
