"""`make_provider`, lazy SDK imports, and the error translation rules."""

from __future__ import annotations

import email.utils
import subprocess
import sys
import time
from typing import Any

import pytest

from rawtrio.errors import (
    AuthenticationFailed,
    BadRequest,
    NoCredentials,
    Overloaded,
    ProviderError,
    RateLimited,
    ServerFailed,
    StreamCut,
)
from rawtrio.providers import ENV_KEYS, make_provider
from rawtrio.providers._stream import open_event_stream
from rawtrio.providers.anthropic import AnthropicAssembler
from rawtrio.providers.base import ProviderSettings
from rawtrio.providers.errors import error_from_service, parse_retry_after
from rawtrio.providers.openai_chat import SDK_ERRORS, ChatAssembler
from rawtrio.providers.openai_responses import ResponsesAssembler


def test_importing_providers_does_not_import_the_sdks() -> None:
    code = (
        "import sys, rawtrio.providers, rawtrio.providers.base\n"
        "heavy = [m for m in ('anthropic', 'openai') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_env_keys() -> None:
    assert ENV_KEYS == {
        "anthropic": "ANTHROPIC_API_KEY",
        "openai-chat": "OPENAI_API_KEY",
        "openai-responses": "OPENAI_API_KEY",
    }


def test_missing_api_key_is_no_credentials() -> None:
    with pytest.raises(NoCredentials, match="ANTHROPIC_API_KEY"):
        make_provider(ProviderSettings(kind="anthropic", model="m", api_key=""))


@pytest.mark.parametrize("kind", ["anthropic", "openai-chat", "openai-responses"])
async def test_make_provider_builds_the_kind(kind: str) -> None:
    settings = ProviderSettings(kind=kind, model="m", api_key="k")  # type: ignore[arg-type]
    provider = make_provider(settings)
    try:
        assert provider.kind == kind
    finally:
        await provider.aclose()


def test_retry_after_seconds_milliseconds_and_dates() -> None:
    assert parse_retry_after({"Retry-After": "12"}) == 12
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    later = email.utils.formatdate(time.time() + 120, usegmt=True)
    value = parse_retry_after({"retry-after": later})
    assert value is not None
    assert 60 < value <= 120


@pytest.mark.parametrize(
    ("status", "error_type", "expected"),
    [
        (401, "invalid_request_error", AuthenticationFailed),  # the status wins over the type
        (503, "overloaded_error", Overloaded),
        (503, None, ServerFailed),
        (None, "overloaded_error", Overloaded),
        (None, "rate_limit_exceeded", RateLimited),
        (None, "something_new", ServerFailed),
        (None, "invalid_request_error", BadRequest),
        (413, "request_too_large", BadRequest),
    ],
)
def test_error_from_service(
    status: int | None, error_type: str | None, expected: type[ProviderError]
) -> None:
    err = error_from_service("p", status=status, error_type=error_type, message="the text")
    assert type(err) is expected
    assert "the text" in str(err)
    assert err.status == status


class _EmptySdkStream:
    """A stream whose body ends cleanly before any event."""

    closed = False

    async def __anext__(self) -> object:
        raise StopAsyncIteration

    async def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    "assembler",
    [AnthropicAssembler, ChatAssembler, ResponsesAssembler],
)
async def test_body_ending_before_the_final_event_is_stream_cut(assembler: type[Any]) -> None:
    sdk_stream = _EmptySdkStream()

    async def start() -> _EmptySdkStream:
        return sdk_stream

    async def read_all() -> None:
        async with open_event_stream("p", SDK_ERRORS, start, assembler()) as events:
            async for _ in events:
                pass

    with pytest.raises(StreamCut, match="incomplete"):
        await read_all()
    assert sdk_stream.closed
