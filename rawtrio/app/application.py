"""The one composition root: command-line overrides + configuration + environment → an open
application (options, store, runtime). Every front end opens it the same way —
`async with open_app(args, ...) as app` — and depends only on `App`'s interface
(docs/contracts.md, "The application: open_app"), never on how it was built: a later
`open_app` may attach to a running host instead of opening a store and a runtime here.

Nothing else in rawtrio (outside `rawtrio/store/`) constructs a store; no front end builds a
runtime, a provider or a tool, or reads the configuration itself.

Ownership: the store, the runtime's nursery and, for the demo, the fake model server all
live inside `open_app`'s block; leaving it closes every live session (each records its
turn, bounded), then the runtime, then the store — the order of the `async with` below.
Errors of the configuration (`ConfigError`, `UsageError`, `NoCredentials`) are raised
before anything is opened.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import trio

from rawtrio.app.choice import Choice, resolve_id, start_session, stored_directory
from rawtrio.app.options import SessionSetup, prepare_session
from rawtrio.contracts import DEFAULT_RETENTION_DAYS
from rawtrio.groups import collapse_group
from rawtrio.messages import ProviderKind
from rawtrio.providers import preload
from rawtrio.runtime.runtime import RegistryFactory, Runtime, default_registry, open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.store.paths import default_db_path
from rawtrio.store.sqlite import SqliteStore


@dataclass
class App:
    """An open application: what a front end may use (docs/contracts.md)."""

    #: The session operations (create, open, fork, list, get, events, rename, delete,
    #: export, search).
    runtime: Runtime
    #: The run's resolved options; None when opened with `configure=False`.
    setup: SessionSetup | None
    _overrides: argparse.Namespace
    _headless: bool
    #: Told each configuration notice (`open_app(notify=...)`).
    _notify: Callable[[str], object] | None = None

    @property
    def options(self) -> SessionOptions:
        return self._setup().options

    @property
    def agent(self) -> str:
        return self._setup().agent

    @property
    def notices(self) -> tuple[str, ...]:
        """What to tell the user about the configuration (one line each)."""
        return self.setup.notices if self.setup is not None else ()

    async def start_session(self, choice: Choice) -> Session:
        """The live session `choice` names (`--continue`, `--resume`, `--fork`, or new).
        Raises `UsageError`, `UnknownSession`, `SessionLocked`, a store error, or
        `ConfigError` / `NoCredentials` for the configuration of a resumed session's own
        directory (resolved there when it is not the run's: `rawtrio.app.choice`); the
        app's `setup` is then that directory's, and its notices are told as at open."""

        async def reconfigure(cwd: Path) -> SessionOptions:
            setup = await self.options_for(cwd=cwd)
            if self._notify is not None:
                told = set(self.notices)
                for notice in setup.notices:
                    if notice not in told:
                        self._notify(notice)
            self.setup = setup
            return setup.options

        return await start_session(self.runtime, choice, self.options, reconfigure)

    async def resolve_id(self, text: str) -> str:
        """The session id `text` names: itself, or the one stored id it is a prefix of."""
        return await resolve_id(self.runtime, text)

    async def options_for(
        self,
        *,
        cwd: Path | None = None,
        agent: str | None = None,
        overrides: argparse.Namespace | None = None,
        env: Mapping[str, str] | None = None,
        headless: bool | None = None,
    ) -> SessionSetup:
        """The options for another working directory or agent, from the same overrides,
        configuration and environment (`ConfigError`, `NoCredentials` as at open).

        A host resolves an attached client's session with the client's own `overrides`
        (its session flags), `env` and `headless` instead of the host's."""
        overrides = copy.copy(self._overrides if overrides is None else overrides)
        if cwd is not None:
            overrides.cwd = str(cwd)
        if agent is not None:
            overrides.agent = agent
        headless = self._headless if headless is None else headless
        return await prepare_session(overrides, headless=headless, env=env)

    def _setup(self) -> SessionSetup:
        if self.setup is None:
            raise RuntimeError("the application was opened without configuration")
        return self.setup


@contextlib.asynccontextmanager
async def open_app(
    overrides: argparse.Namespace | None = None,
    *,
    headless: bool = False,
    configure: bool = True,
    retention: bool = True,
    registry_factory: RegistryFactory = default_registry,
    demo: bool = False,
    notify: Callable[[str], object] | None = None,
) -> AsyncIterator[App]:
    """Open the application; see the module docstring and docs/contracts.md.

    `configure=False` reads no configuration (the store's own commands); `retention=False`
    leaves expired sessions in place; `registry_factory` builds each session's tools (ACP
    wraps them with editor-backed handlers); `demo=True` runs against the built-in fake
    model in a scratch project with a store of its own, all gone when the block ends.
    `notify` is given each configuration notice as soon as the configuration is resolved,
    before the store opens (a store that fails to open does not hide them).
    """
    overrides = overrides if overrides is not None else argparse.Namespace()
    if demo:
        async with _open_demo(overrides) as app:
            yield app
        return
    if configure:
        overrides = await _in_resumed_directory(overrides)
    # Configuration first: a bad file or a missing key opens nothing.
    setup = await prepare_session(overrides, headless=headless) if configure else None
    if setup is not None and notify is not None:
        for notice in setup.notices:
            notify(notice)
    async with (
        _loading_sdk(setup if headless else None),
        SqliteStore(default_db_path()) as store,
        open_runtime(
            store,
            registry_factory=registry_factory,
            retention_days=DEFAULT_RETENTION_DAYS if retention else 0,
        ) as runtime,
    ):
        yield App(runtime, setup, overrides, headless, notify)


async def _in_resumed_directory(overrides: argparse.Namespace) -> argparse.Namespace:
    """`--resume ID` without `--cwd`: the overrides with the session's own directory, so its
    project's configuration is the one resolved (and the run directory's is not read).
    Unchanged when the store does not name one existing directory for ID (opening the
    session then says why)."""
    resume = getattr(overrides, "resume", None)
    if not resume or getattr(overrides, "cwd", None):
        return overrides
    where = await stored_directory(resume)
    if where is None or not await trio.Path(where).is_dir():
        return overrides
    moved = copy.copy(overrides)
    moved.cwd = str(where)
    return moved


@contextlib.asynccontextmanager
async def _loading_sdk(setup: SessionSetup | None) -> AsyncIterator[None]:
    """Import the configured provider's SDK in a worker thread while the store, the
    runtime and the session open (a headless run: its first request needs the SDK next).

    Their work waits on the disk and on process starts much of the time, and the import
    goes on meanwhile; the session's client build then finds the SDK imported, or waits for
    the rest of the import under Python's import lock. A failing import is left to that
    build to report (it runs the import again). Leaving the block abandons an unfinished
    import (`abandon_on_cancel`): the process is ending or the SDK is not needed."""
    if setup is None:
        yield
        return

    async def load(kind: ProviderKind) -> None:
        with contextlib.suppress(Exception):
            await trio.to_thread.run_sync(preload, kind, abandon_on_cancel=True)

    # Exception-group policy: `load` never raises, so a group holds only the block's own
    # error, which `collapse_group` re-raises plain.
    with collapse_group():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(load, setup.options.provider.kind, name="load the SDK")
            try:
                yield
            finally:
                nursery.cancel_scope.cancel(reason="the application closed")


@contextlib.asynccontextmanager
async def _open_demo(overrides: argparse.Namespace) -> AsyncIterator[App]:
    """The demo: the fake model server, a scratch project and a store of its own."""
    from rawtrio.app.demo import SCENARIO, demo_options, prepare_scratch
    from rawtrio.testing.fake_model import Scenario, open_fake_model_server

    with tempfile.TemporaryDirectory(prefix="rawtrio-demo-") as tmp:
        cwd = await trio.to_thread.run_sync(prepare_scratch, Path(tmp))
        async with (
            open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
            SqliteStore(Path(tmp) / "demo.db") as store,
            open_runtime(store, retention_days=0) as runtime,
        ):
            setup = SessionSetup(demo_options(server.base_url, cwd), notices=(), agent="demo")
            yield App(runtime, setup, overrides, False)
