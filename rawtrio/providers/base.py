"""The provider interface: one streamed model request, in provider-neutral terms.

An adapter turns a `ModelRequest` into an HTTP request through the official SDK and yields
`StreamEvent`s while the response streams. The last event of a successful stream is
`StreamDone`, carrying the complete `AssistantMessage`; a stream that ends any other way
raises a `ProviderError` (or `trio.Cancelled` propagates). The agent loop commits the
message only after `StreamDone` (turn contract §3.2).

Retries: the SDKs' own retries are off. The agent loop retries a failed request under
`rawtrio.providers.retry` (it alone knows whether anything of the reply was shown). Closing
the `stream()` context closes the HTTP response at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from rawtrio.frozen import FrozenJSON, empty
from rawtrio.messages import AssistantMessage, Message, ProviderKind


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it. `name` already fits the providers' name pattern."""

    name: str
    description: str
    input_schema: FrozenJSON


@dataclass(frozen=True, slots=True)
class ModelRequest:
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    model: str
    max_tokens: int
    #: Extra provider parameters (temperature, thinking budget, …), passed through.
    extra: FrozenJSON = field(default_factory=empty)


@dataclass(frozen=True, slots=True)
class UsageInfo:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        """Everything the request's prompt counted: the three input figures are disjoint.

        Every adapter reports `input_tokens` without the cached tokens (Anthropic's way;
        the OpenAI adapters subtract `cached_tokens` from the prompt count).
        """
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


# --- stream events -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallBegin:
    """The model started streaming a tool call (its arguments may still be arriving)."""

    index: int
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    index: int
    call_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class StreamDone:
    message: AssistantMessage
    #: The provider's stop reason, normalised: "end_turn", "tool_use", "max_tokens", other.
    stop_reason: str
    usage: UsageInfo


StreamEvent = TextDelta | ThinkingDelta | ToolCallBegin | ToolCallArgsDelta | StreamDone


class Provider(Protocol):
    """One configured model endpoint (an SDK client). Owned by a session's runtime."""

    kind: ProviderKind

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """Open the streamed request; iterate for events; leaving the block closes it."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """What it takes to build a provider client (flags/env now, config later)."""

    kind: ProviderKind
    model: str
    api_key: str
    base_url: str | None = None
    #: Connecting, sending, and waiting for the response to start.
    request_timeout_s: float = 600.0
    #: A started reply that sends no byte for this long has stalled (`providers.http`).
    stream_idle_timeout_s: float = 90.0
    #: Retries of one failed request (`providers.retry`), and the time they may take.
    max_retries: int = 6
    retry_budget_s: float = 300.0
    default_headers: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
