"""The process-wide runtime: owns the root nursery, the store and the live sessions."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio

from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.groups import collapse_group
from rawtrio.providers.base import Provider, ProviderSettings
from rawtrio.runtime.prompt import system_prompt
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.store.base import SessionStore
from rawtrio.tools.registry import ToolRegistry
from rawtrio.tools.subreaper import become_child_subreaper

ProviderFactory = Callable[[ProviderSettings], Provider]
RegistryFactory = Callable[[SessionOptions], ToolRegistry]


def _default_provider(settings: ProviderSettings) -> Provider:
    from rawtrio.providers import make_provider

    return make_provider(settings)


def _default_registry(options: SessionOptions) -> ToolRegistry:
    from rawtrio.tools.builtin import builtin_registry

    return builtin_registry(options.tools)


class Runtime:
    def __init__(
        self,
        nursery: trio.Nursery,
        store: SessionStore,
        provider_factory: ProviderFactory,
        registry_factory: RegistryFactory,
    ) -> None:
        self._nursery = nursery
        self.store = store
        self._provider_factory = provider_factory
        self._registry_factory = registry_factory
        self._live: dict[str, Session] = {}

    async def create_session(self, options: SessionOptions, *, title: str = "") -> Session:
        record = await self.store.create_session(
            session_id=uuid.uuid4().hex,
            cwd=str(options.cwd),
            system_prompt=system_prompt(options.cwd, options.system_prompt),
            provider=options.provider.kind,
            model=options.provider.model,
            title=title,
        )
        return await self._start(record.id, options)

    async def open_session(self, session_id: str, options: SessionOptions) -> Session:
        """The live session with this id, starting it from the store if needed."""
        live = self._live.get(session_id)
        if live is not None and not live.closed:
            return live
        return await self._start(session_id, options)

    async def _start(self, session_id: str, options: SessionOptions) -> Session:
        record = await self.store.get_session(session_id)
        session = Session(
            record=record,
            options=options,
            store=self.store,
            # Building an SDK client imports the SDK (~1 s the first time) and loads TLS
            # certificates (~40 ms): off the event loop, so other sessions never stall.
            provider=await trio.to_thread.run_sync(self._provider_factory, options.provider),
            registry=self._registry_factory(options),
            context=await self.store.load_context(session_id),
            last_seq=await self.store.last_seq(session_id),
        )
        await self._nursery.start(session.run)
        self._live[session_id] = session
        return session

    async def aclose(self) -> None:
        """Close every live session (each records its turn's outcome)."""
        async with trio.open_nursery() as nursery:
            for session in self._live.values():
                if not session.closed:
                    nursery.start_soon(session.close, "runtime shutting down")
        self._live.clear()


@asynccontextmanager
async def open_runtime(
    store: SessionStore,
    *,
    provider_factory: ProviderFactory = _default_provider,
    registry_factory: RegistryFactory = _default_registry,
) -> AsyncIterator[Runtime]:
    # Re-parented descendants of tool processes (double fork, setsid) become our children,
    # so they can be found and ended (Linux; a no-op elsewhere).
    become_child_subreaper()
    with collapse_group():
        async with trio.open_nursery() as nursery:
            runtime = Runtime(nursery, store, provider_factory, registry_factory)
            try:
                yield runtime
            finally:
                with trio.move_on_after(CLEANUP_DEADLINE_S * 2) as cleanup:
                    cleanup.shield = True
                    await runtime.aclose()
                nursery.cancel_scope.cancel(reason="runtime closed")
