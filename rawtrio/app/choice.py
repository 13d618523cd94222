"""Which session a run works in: a new one, the latest of the working directory
(`--continue`), a given one (`--resume ID`), or a new copy of either (`--fork`, via
`Runtime.fork_session`; the source is left as it was). Opening an existing session takes
its writer lease — `SessionLocked` while another process has it open — and repairs what a
killed writer left (the runtime does both).

A session resumed from another directory works in its own: its project configuration
(`.rawtrio/config.toml`, `.claude/settings.json`, project MCP servers, skills, memory files)
is resolved again there, with the run's user configuration, flags and environment
(`Reconfigure`); the run directory's project files do not apply to it.

An id may be given as a unique prefix of at least `MIN_PREFIX` characters, as with git.

`writer_lease` holds a session's lease for an operation that changes a stored session from
outside a turn (`rawtrio undo`, `redo`, `rewind`): while another process (a chat, a
headless run, the host) has the session open, it refuses with `SessionLocked` rather than
change the files and the conversation under that process's feet.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import trio

from rawtrio.errors import UnknownSession, UsageError
from rawtrio.runtime.runtime import Runtime
from rawtrio.runtime.session import Session, SessionOptions

if TYPE_CHECKING:
    from rawtrio.store.base import SessionRecord

MIN_PREFIX = 4


@dataclass(frozen=True)
class Choice:
    """The session flags of a run (`--continue`, `--resume ID`, `--fork`, `--cwd`)."""

    continue_: bool = False
    resume: str | None = None
    fork: bool = False
    #: `--cwd` was given (it then has to agree with a resumed session's directory).
    explicit_cwd: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Choice:
        return cls(args.continue_, args.resume, args.fork, args.cwd is not None)

    @property
    def new(self) -> bool:
        return not (self.continue_ or self.resume)


#: The run's options resolved again for another working directory: its project files,
#: the same user configuration, flags and environment (`App.options_for(cwd=...)`).
Reconfigure = Callable[[Path], Awaitable[SessionOptions]]


async def start_session(
    runtime: Runtime,
    choice: Choice,
    options: SessionOptions,
    reconfigure: Reconfigure | None = None,
) -> Session:
    """The live session the run works in. Raises `UsageError`, `UnknownSession`,
    `SessionLocked` (another process has it open), a store error, or what `reconfigure`
    raises for the configuration of a resumed session's directory (`ConfigError`, ...).
    Without `reconfigure`, a session of another directory keeps the run's configuration,
    only its permission rules' path patterns moved there."""
    if choice.new:
        return await runtime.create_session(options)
    if choice.continue_:
        latest = await runtime.list_sessions(cwd=str(options.cwd))
        if not latest:
            raise UsageError(
                f"--continue: no stored session in {options.cwd} (start one without --continue)"
            )
        source = latest[0]
    else:
        assert choice.resume is not None
        source = await runtime.get_session(await resolve_id(runtime, choice.resume))
    cwd = Path(source.cwd)
    if choice.explicit_cwd and cwd != options.cwd:
        raise UsageError(
            f"--cwd: session {source.id} works in {cwd}; leave out --cwd to resume it there"
        )
    if not await trio.Path(cwd).is_dir():
        raise UsageError(f"session {source.id} works in {cwd}, which is no longer a directory")
    # A resumed session keeps its directory (its system prompt was made for it), and its
    # project's configuration applies, the command line's path patterns anchored there;
    # flags (provider, model, limits) are this run's.
    if cwd != options.cwd:
        options = await reconfigure(cwd) if reconfigure is not None else options.in_directory(cwd)
    session_id = await runtime.fork_session(source.id) if choice.fork else source.id
    return await runtime.open_session(session_id, options)


class StoredSessions(Protocol):
    """What `resolve_id` reads (a `Runtime`, or a chat's runtime attached to a host)."""

    async def get_session(self, session_id: str) -> SessionRecord: ...

    async def list_sessions(self, *, cwd: str | None = None) -> list[SessionRecord]: ...


async def resolve_id(runtime: StoredSessions, text: str) -> str:
    """The id `text` names: itself, or the one stored id it is a prefix of."""
    try:
        return (await runtime.get_session(text)).id
    except UnknownSession:
        if len(text) < MIN_PREFIX:
            raise
    found = [r.id for r in await runtime.list_sessions() if r.id.startswith(text)]
    if len(found) > 1:
        raise UsageError(f"{text!r} is the start of {len(found)} session ids; give more of it")
    if not found:
        raise UnknownSession(text)
    return found[0]


async def stored_directory(text: str) -> Path | None:
    """The working directory of the stored session `text` names (an id or a prefix), read
    before the application opens, for what must happen first: a chat's trust prompt for
    `--resume ID` asks about that project's files, not the run directory's. None when the
    store has no such single session or cannot be read (opening the session says why)."""
    from rawtrio.errors import RawtrioError
    from rawtrio.store.paths import default_db_path
    from rawtrio.store.sqlite import SqliteStore

    path = default_db_path()
    if not await trio.Path(path).is_file():
        return None
    try:
        async with SqliteStore(path) as store:
            return Path((await store.get_session(await resolve_id(store, text))).cwd)
    except (RawtrioError, OSError):
        return None


@contextlib.asynccontextmanager
async def writer_lease(runtime: Runtime, session_id: str) -> AsyncIterator[None]:
    """Hold `session_id`'s writer lease for the block (docs/checkpoints.md, "Who may undo").

    Raises `SessionLocked` (naming the holder's pid) at once while another process has the
    session open; nothing waits. A session live in this runtime is held already (the caller
    checks that no turn runs in it); a session the store no longer has is nobody's, so the
    block runs without a lease (its checkpoints may outlive it). The lease taken here is
    given back when the block ends, shielded and bounded like every cleanup."""
    held = False
    if session_id not in runtime.live_sessions:
        # No stored session (deleted, its checkpoints kept): no other process can have it.
        with contextlib.suppress(UnknownSession):
            await runtime.store.open_for_write(session_id)
            held = True
    try:
        yield
    finally:
        # A session opened in this runtime meanwhile (a host's client resumed it) shares
        # the store's lease: it keeps it.
        if held and session_id not in runtime.live_sessions:
            with trio.move_on_after(_RELEASE_DEADLINE_S) as cleanup:
                cleanup.shield = True
                await runtime.store.close_session(session_id)


#: How long giving a lease back may take (it closes a file; the bound is for the rule).
_RELEASE_DEADLINE_S = 5.0
