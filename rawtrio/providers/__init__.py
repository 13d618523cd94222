"""Model providers: one adapter per wire format, each through its official SDK.

Importing this package is cheap: the adapters (and with them `anthropic` / `openai`, about
a second to import) load only when `make_provider` builds one. A front end that wants the
first request to be fast can call `preload(kind)` in the background while the user types.

- `anthropic` — Anthropic Messages (`rawtrio.providers.anthropic`)
- `openai-chat` — OpenAI Chat Completions and compatible servers (`openai_chat`)
- `openai-responses` — OpenAI Responses, stateless (`openai_responses`)
"""

from __future__ import annotations

import importlib
from typing import Final

from rawtrio.errors import NoCredentials
from rawtrio.messages import ProviderKind
from rawtrio.providers.base import Provider, ProviderSettings

__all__ = ["ENV_KEYS", "KINDS", "check_settings", "make_provider", "preload"]

#: The environment variable that holds each provider's API key.
ENV_KEYS: Final[dict[ProviderKind, str]] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}

KINDS: Final[tuple[ProviderKind, ...]] = tuple(ENV_KEYS)

_ADAPTERS: Final[dict[ProviderKind, tuple[str, str]]] = {
    "anthropic": ("rawtrio.providers.anthropic", "AnthropicProvider"),
    "openai-chat": ("rawtrio.providers.openai_chat", "OpenAIChatProvider"),
    "openai-responses": ("rawtrio.providers.openai_responses", "OpenAIResponsesProvider"),
}


#: The SDK each adapter is built on.
_SDKS: Final[dict[ProviderKind, str]] = {
    "anthropic": "anthropic",
    "openai-chat": "openai",
    "openai-responses": "openai",
}


def preload(kind: ProviderKind) -> None:
    """Import the SDK for `kind`, then its adapter, now; blocking, so run it in a thread."""
    importlib.import_module(_SDKS[kind])
    importlib.import_module(_ADAPTERS[kind][0])


def check_settings(settings: ProviderSettings) -> None:
    """Raise `ValueError` for an unknown kind, `NoCredentials` when the API key is empty."""
    if settings.kind not in _ADAPTERS:
        raise ValueError(f"unknown provider kind {settings.kind!r}; expected one of {KINDS}")
    if not settings.api_key:
        raise NoCredentials(settings.kind, ENV_KEYS[settings.kind])


def make_provider(settings: ProviderSettings, *, client: object | None = None) -> Provider:
    """Build the provider client for `settings`; close it with `await provider.aclose()`.

    `client` lends an SDK client built for the same settings (a `clients.ClientPool`'s):
    the provider streams through it and its `aclose()` leaves it open.
    Raises `NoCredentials` when the API key is empty, `ValueError` for an unknown kind.
    """
    check_settings(settings)
    module_name, class_name = _ADAPTERS[settings.kind]
    cls = getattr(importlib.import_module(module_name), class_name)
    provider: Provider = cls(settings) if client is None else cls(settings, client=client)
    return provider
