"""The process-wide runtime: owns the root nursery, the store, the live sessions and the
provider clients they share.

A closed session leaves `Runtime` at once (its task removes it as it ends), so a
long-running process holds only the sessions that are open, never one per session it
ever served. Sessions with the same endpoint and key borrow one SDK client from the
runtime's `ClientPool` (rawtrio.providers.clients), which the runtime closes last.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio

from rawtrio.context.accounting import UsageTotals, usage_from_json
from rawtrio.contracts import CLEANUP_DEADLINE_S, DEFAULT_RETENTION_DAYS
from rawtrio.errors import RawtrioError, UsageError
from rawtrio.events import Event
from rawtrio.groups import collapse_group
from rawtrio.processes.subreaper import become_child_subreaper
from rawtrio.processes.watchdog import guard_processes
from rawtrio.providers.base import Provider, ProviderSettings
from rawtrio.providers.clients import ClientPool
from rawtrio.runtime.prompt import system_prompt
from rawtrio.runtime.session import PENDING_NOTE_KEY, USAGE_STATE_KEY, Session, SessionOptions
from rawtrio.skills import changed_skills, skill_fingerprints
from rawtrio.store.base import ExportFormat, HistoryPage, SearchHit, SessionRecord, SessionStore
from rawtrio.tools.base import Tool
from rawtrio.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
#: Session state key of the skills' fingerprints when the session last ran.
SKILLS_STATE_KEY = "skill_fingerprints"

ProviderFactory = Callable[[ProviderSettings], Provider]
RegistryFactory = Callable[[SessionOptions], ToolRegistry]


def default_registry(
    options: SessionOptions, wrap: Callable[[Tool], Tool] | None = None
) -> ToolRegistry:
    """Built-ins and the session's extra tools, narrowed to the agent's selection, in its
    order. `wrap` may replace each chosen tool (a front end routing file tools elsewhere)."""
    from rawtrio.tools.builtin import builtin_registry

    everything = builtin_registry(options.tools)
    for tool in options.extra_tools:
        everything.register(tool)
    if options.tool_selection is None and wrap is None:
        return everything
    ids = options.tool_selection
    if ids is None:
        ids = tuple(t.id for t in everything.tools())
    selected = ToolRegistry()
    for tool_id in ids:
        chosen = everything.get(tool_id)
        if chosen is not None:
            selected.register(wrap(chosen) if wrap else chosen)
    return selected


async def _expire(store: SessionStore, retention_days: float) -> None:
    try:
        removed = await store.expire_sessions(retention_days)
    except RawtrioError as exc:  # a store problem must not take the runtime down
        log.warning("could not expire old sessions: %s", exc)
        return
    if removed:
        log.info("removed %d expired session(s)", len(removed))
        await _drop_checkpoints(removed)


async def _drop_checkpoints(session_ids: list[str]) -> None:
    """A session's checkpoints go with it (rawtrio.checkpoints, docs/checkpoints.md)."""
    from rawtrio.checkpoints.store import checkpoints_root, drop_sessions_everywhere

    try:
        await trio.to_thread.run_sync(drop_sessions_everywhere, checkpoints_root(), session_ids)
    except OSError as exc:
        log.warning("could not remove the checkpoints of removed sessions: %s", exc)


class Runtime:
    def __init__(
        self,
        nursery: trio.Nursery,
        store: SessionStore,
        provider_factory: ProviderFactory | None,
        registry_factory: RegistryFactory,
    ) -> None:
        self._nursery = nursery
        self.store = store
        #: The SDK clients the sessions borrow (unless a `provider_factory` is given).
        self.clients = ClientPool()
        self._provider_factory = provider_factory or self.clients.provider
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
        # Take the writer lease first (SessionLocked if another process holds it), which
        # also repairs what a crash left: results for cut calls, interrupted turns (I6).
        report = await self.store.open_for_write(session_id)
        try:
            await self._recover_children(session_id)
            record = await self.store.get_session(session_id)
            notes = [
                await self.store.get_state(session_id, PENDING_NOTE_KEY),
                report.note(),
                await self._skills_notice(session_id, options),
            ]
            session = Session(
                record=record,
                options=options,
                store=self.store,
                # Building an SDK client imports the SDK (~1 s the first time) and loads
                # TLS certificates (~40 ms): off the event loop, so nothing else stalls.
                # The default factory lends the runtime's client for this endpoint and key.
                provider=await trio.to_thread.run_sync(self._provider_factory, options.provider),
                registry=self._registry_factory(options),
                context=await self.store.load_context(session_id),
                last_seq=await self.store.last_seq(session_id),
                provider_factory=self._provider_factory,
                registry_factory=self._registry_factory,
                note="\n\n".join(n for n in notes if n) or None,
            )
            await self._nursery.start(self._run_session, session)
        except BaseException:
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                await self.store.close_session(session_id)
            raise
        if not session.closed:
            self._live[session_id] = session
        return session

    async def _recover_children(self, session_id: str) -> None:
        """Repair what a crash left in the session's `task` children (and theirs): they are
        never opened on their own, so their cut calls get their results here (I6)."""
        for child in await self.store.list_children(session_id):
            await self.store.open_for_write(child.id)
            try:
                await self._recover_children(child.id)
            finally:
                with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                    cleanup.shield = True
                    await self.store.close_session(child.id)

    async def _run_session(
        self, session: Session, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await session.run(task_status=task_status)
        finally:
            if self._live.get(session.id) is session:
                del self._live[session.id]

    @property
    def live_sessions(self) -> tuple[str, ...]:
        """The ids of the sessions open in this process."""
        return tuple(self._live)

    async def _skills_notice(self, session_id: str, options: SessionOptions) -> str | None:
        """Tell the model when its skills changed since the session last ran (the system
        prompt stays as it was: committed history is never rewritten)."""
        now = skill_fingerprints(options.skills)
        before = await self.store.get_state(session_id, SKILLS_STATE_KEY)
        await self.store.set_state(session_id, SKILLS_STATE_KEY, now)
        if before is None:
            return None
        return changed_skills(before, now, skills=options.skills)

    # --- stored sessions: the operations front ends use instead of the store -------------

    async def list_sessions(self, *, cwd: str | None = None) -> list[SessionRecord]:
        """Stored sessions, most recently updated first (optionally of one directory)."""
        return await self.store.list_sessions(cwd=cwd)

    async def list_children(self, session_id: str) -> list[SessionRecord]:
        """A session's `task` children, oldest first (never in `list_sessions`)."""
        return await self.store.list_children(session_id)

    async def get_session(self, session_id: str) -> SessionRecord:
        return await self.store.get_session(session_id)

    async def session_events(self, session_id: str, after_seq: int = 0) -> list[Event]:
        """A session's display history (what the user saw), in order."""
        return await self.store.events_since(session_id, after_seq)

    async def history(
        self,
        session_id: str,
        *,
        cursor: str | None = None,
        limit: int = 50,
        newest_first: bool = True,
    ) -> HistoryPage:
        """A page of a session's display history, paged with keyset cursors (docs/store.md);
        `InvalidCursor` for a cursor no page returned."""
        return await self.store.history(
            session_id, cursor=cursor, limit=limit, newest_first=newest_first
        )

    async def last_seq(self, session_id: str) -> int:
        """The sequence number of a session's last stored event (0: none)."""
        return await self.store.last_seq(session_id)

    async def usage(self, session_id: str) -> UsageTotals:
        """A session's usage totals: the live session's, else those stored with it."""
        live = self._live.get(session_id)
        if live is not None and not live.closed:
            return live.usage
        saved = await self.store.get_state(session_id, USAGE_STATE_KEY)
        return usage_from_json(saved, UsageTotals())

    async def fork_session(
        self, source_id: str, *, before_turn: str | None = None, title: str | None = None
    ) -> str:
        """A new session copying another's model context and display history; its id.
        With `before_turn`, only what came before that turn's prompt (a rewind,
        docs/checkpoints.md); `UsageError` when that turn has no prompt in the session."""
        up_to: int | None = None
        if before_turn is not None:
            up_to = await self.store.prompt_position(source_id, before_turn)
            if up_to is None:
                raise UsageError(f"session {source_id} has no prompt of turn {before_turn}")
        session_id = uuid.uuid4().hex
        await self.store.fork_session(source_id, session_id=session_id, up_to=up_to, title=title)
        return session_id

    async def rename_session(self, session_id: str, title: str) -> None:
        await self.store.rename_session(session_id, title)
        live = self._live.get(session_id)
        if live is not None:
            live.record = dataclasses.replace(live.record, title=title)

    async def delete_session(self, session_id: str) -> None:
        """Delete a stored session; one live in this process is closed first."""
        live = self._live.pop(session_id, None)
        if live is not None and not live.closed:
            await live.close("session deleted")
        # Its `task` children go with it (they are listed nowhere else).
        for child in await self.store.list_children(session_id):
            await self.delete_session(child.id)
        await self.store.delete_session(session_id)
        await _drop_checkpoints([session_id])

    async def export_session(self, session_id: str, fmt: ExportFormat) -> str:
        return await self.store.export_session(session_id, fmt)

    async def search(
        self, query: str, *, cwd: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        return await self.store.search(query, cwd=cwd, limit=limit)

    async def aclose(self) -> None:
        """Close every live session (each records its turn's outcome), then the clients."""
        try:
            async with trio.open_nursery() as nursery:
                for session in list(self._live.values()):
                    if not session.closed:
                        nursery.start_soon(session.close, "runtime shutting down")
            self._live.clear()
        finally:
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                await self.clients.aclose()


@asynccontextmanager
async def open_runtime(
    store: SessionStore,
    *,
    provider_factory: ProviderFactory | None = None,
    registry_factory: RegistryFactory = default_registry,
    retention_days: float = DEFAULT_RETENTION_DAYS,
) -> AsyncIterator[Runtime]:
    """The process's runtime. Expired sessions are removed in the background.

    `provider_factory` builds each session's provider (a test's fake, say); by default
    sessions borrow the runtime's shared SDK clients (`Runtime.clients`)."""
    # Re-parented descendants of tool processes (double fork, setsid) become our children,
    # so they can be found and ended (Linux; a no-op elsewhere).
    become_child_subreaper()
    with collapse_group():
        # A watchdog ends this process's children should it die; leftovers of dead ones
        # in the same state directory are swept now (rawtrio/processes/watchdog.py).
        db_path = getattr(store, "path", None)
        async with guard_processes(db_path), trio.open_nursery() as nursery:
            runtime = Runtime(nursery, store, provider_factory, registry_factory)
            if retention_days:
                nursery.start_soon(_expire, store, retention_days, name="expire sessions")
            try:
                yield runtime
            finally:
                with trio.move_on_after(CLEANUP_DEADLINE_S * 2) as cleanup:
                    cleanup.shield = True
                    await runtime.aclose()
                nursery.cancel_scope.cancel(reason="runtime closed")
