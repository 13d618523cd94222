"""The session's model binding: the provider client, the options it came from, the context
accounting and the usage totals — everything `set_model` changes together.

It builds each request (system prompt, committed context, the session's tool list), turns
each reply's usage into the accountant's figures and a `usage` event, and swaps provider,
options and limits in one synchronous stretch when the model changes. The accounting rules
themselves are `rawtrio.context.accounting`; events go out through the recorder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import trio

from rawtrio import events as ev
from rawtrio.context.accounting import Accountant, UsageTotals, usage_from_json, usage_to_json
from rawtrio.context.models import limits_for
from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.errors import UsageError
from rawtrio.providers.base import (
    ModelRequest,
    Provider,
    ProviderSettings,
    ToolSpec,
    UsageInfo,
)
from rawtrio.runtime.options import SessionOptions
from rawtrio.runtime.recorder import Recorder

ProviderFactory = Callable[[ProviderSettings], Provider]


class ModelBinding:
    def __init__(
        self,
        *,
        options: SessionOptions,
        provider: Provider,
        provider_factory: ProviderFactory | None,
        recorder: Recorder,
        system_prompt: str,
    ) -> None:
        self.options = options
        self.provider = provider
        self._factory = provider_factory
        self._recorder = recorder
        self._system = system_prompt
        # The model-facing tool list is fixed for the session (modes never change it, so
        # the prompt cache survives); the session sets it as it starts.
        self.tool_specs: tuple[ToolSpec, ...] = ()
        #: A hash of the tool definitions: part of the prompt-cache key, so the key changes
        #: exactly when the tools do (set as the session starts).
        self.tools_digest = ""
        limits = limits_for(
            options.provider.model,
            context_window=options.context_window,
            max_output_tokens=options.max_output_tokens,
        )
        self.accountant = Accountant(limits.context_window)
        self.output_limit = limits.max_output_tokens
        #: The session's running usage and cost totals, over every run of the session.
        self.usage = UsageTotals(context_window=limits.context_window)

    @property
    def name(self) -> str:
        """The configured name of the model in use, else its model id."""
        return self.options.model_name or self.options.provider.model

    def build_request(self) -> ModelRequest:
        return ModelRequest(
            system=self._system,
            messages=tuple(self._recorder.context),
            tools=self.tool_specs,
            model=self.options.provider.model,
            max_tokens=self.options.max_output_tokens,
        )

    # --- usage and accounting (rawtrio.context.accounting) ---------------------------

    def load_usage(self, saved: Any) -> None:
        self.usage = usage_from_json(saved, self.usage)

    def usage_json(self) -> Any:
        return usage_to_json(self.usage)

    def record_usage(self, u: UsageInfo, *, step: int, turn_id: str | None) -> None:
        """Add one request's usage to the totals and emit `usage` (step 0: a summary)."""
        cost = self.options.prices.cost(u) if self.options.prices is not None else None
        self.usage = self.usage.add(u, cost)
        self._recorder.emit(
            ev.Usage(
                session_id=self._recorder.session_id,
                turn_id=turn_id,
                step=step,
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cache_read_tokens=u.cache_read_tokens,
                cache_write_tokens=u.cache_write_tokens,
                context_tokens=u.total_input_tokens,
                context_window=self.accountant.window,
                cost_usd=cost,
                session_cost_usd=self.usage.cost_usd,
            )
        )

    def replied(self, u: UsageInfo, *, sent: int, step: int, turn_id: str) -> None:
        """A reply to a request of `sent` messages was committed: account its usage."""
        self.accountant.reported(u, sent)
        self.record_usage(u, step=step, turn_id=turn_id)

    def context_replaced(self) -> None:
        """The context was compacted: the accountant starts over from the new request."""
        self.accountant.reset()
        size = self.accountant.request_tokens(self.build_request())
        self.usage = dataclasses.replace(self.usage, context_tokens=size)

    # --- switching models --------------------------------------------------------------

    def check(self, name: str) -> None:
        """Raise `UsageError` unless `name` is a configured model this session can switch to."""
        names = self.options.model_names
        if self.options.options_for_model is None or self._factory is None or name not in names:
            known = ", ".join(names) or "none"
            raise UsageError(f"unknown model {name!r}; configured models: {known}")

    async def prepare(self, name: str) -> tuple[SessionOptions, Provider]:
        """The options and a provider for the configured model `name` (not bound yet).

        Raises `UsageError` for a name that is not configured, and what reading the
        model's API key raises (`NoCredentials`, `VariableError`)."""
        self.check(name)
        derive, factory = self.options.options_for_model, self._factory
        assert derive is not None  # `check` said so
        assert factory is not None
        options = await derive(name)
        # Building a client may import an SDK (~1 s the first time): off the event loop.
        return options, await trio.to_thread.run_sync(factory, options.provider)

    async def bind(self, name: str, options: SessionOptions, provider: Provider) -> None:
        """Use `provider` and `options` from the next request on; close the old client."""
        old, self.provider, self.options = self.provider, provider, options
        limits = limits_for(
            options.provider.model,
            context_window=options.context_window,
            max_output_tokens=options.max_output_tokens,
        )
        self.accountant.window = limits.context_window
        self.output_limit = limits.max_output_tokens
        self.usage = dataclasses.replace(self.usage, context_window=limits.context_window)
        with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
            cleanup.shield = True
            await old.aclose()
        self._recorder.emit(
            ev.ModelChanged(
                session_id=self._recorder.session_id,
                model=name,
                model_id=options.provider.model,
                provider=options.provider.kind,
            )
        )
