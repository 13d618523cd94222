"""What the two chats' slash commands share: the full-screen chat's (`rawtrio.tui.commands`)
and the line chat's (`rawtrio.cli.repl`). The same checks and the same messages, so the two
cannot drift: `/model [NAME]`, `/mode [MODE]`, the options a session of `/new`, `/agent` or
`/resume` opens with, and a stored session's line in the `/sessions` list.

The sessions and options are the chats' own (a local `Session`, or one of a chat attached
to a host): what is used of them is spelled out as protocols here.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio

from rawtrio.errors import UsageError
from rawtrio.permissions.rules import PermissionMode

if TYPE_CHECKING:
    from rawtrio.store.base import SessionRecord

#: Stored sessions `/sessions` lists at most.
SESSIONS_LISTED = 50
#: Makes the options of a session in another directory (that project's configuration)
#: and their configuration notices.
OptionsForCwd = Callable[[Path], Awaitable[tuple[Any, tuple[str, ...]]]]


class ModelSwitch(Protocol):
    """What `/model` uses of a session."""

    @property
    def model_name(self) -> str: ...

    @property
    def model_names(self) -> tuple[str, ...]: ...

    async def set_model(self, name: str) -> None: ...


class _ModeHolder(Protocol):
    @property
    def mode(self) -> PermissionMode: ...


class ModeSwitch(Protocol):
    """What `/mode` uses of a session."""

    @property
    def policy(self) -> _ModeHolder: ...

    def set_mode(self, mode: PermissionMode | str) -> None: ...


class MovableOptions(Protocol):
    """A session's options as the chats read them: where it works, and the same options
    moved to another directory."""

    @property
    def cwd(self) -> Path: ...

    def in_directory(self, cwd: Path) -> Any: ...


def model_shown(session: ModelSwitch) -> str:
    """`/model`: the model in use and the configured ones."""
    names = session.model_names
    listed = ", ".join(names) if names else "(no other models configured)"
    return f"model: {session.model_name}; configured: {listed}"


async def switch_model(session: ModelSwitch, name: str) -> str:
    """`/model NAME`: switch from the next request on (`UsageError` naming the configured
    models for a name that is not one; the session keeps its model then)."""
    await session.set_model(name)
    return f"model: {session.model_name} from the next request on"


def mode_choices() -> str:
    return ", ".join(m.value for m in PermissionMode)


def mode_shown(session: ModeSwitch) -> str:
    """`/mode`: the permission mode and the choices."""
    return f"permission mode: {session.policy.mode.value} (choices: {mode_choices()})"


def parse_mode(text: str) -> PermissionMode:
    """The mode `/mode MODE` names (`UsageError` listing the choices otherwise)."""
    try:
        return PermissionMode(text)
    except ValueError:
        raise UsageError(f"unknown mode {text!r}; choices: {mode_choices()}") from None


async def options_where_launched(
    options: MovableOptions, launch_dir: Path | None, make: OptionsForCwd | None
) -> tuple[Any, tuple[str, ...]]:
    """The options of a new session (and their configuration notices): in the directory
    rawtrio was launched in. After `rawtrio --resume ID` run elsewhere the chat's options
    are the resumed session's directory's, which apply to that session only."""
    if launch_dir is None or options.cwd == launch_dir:
        return options, ()
    if make is None:
        return options.in_directory(launch_dir), ()
    return await make(launch_dir)


async def options_for_stored(
    record: SessionRecord, options: MovableOptions, make: OptionsForCwd | None
) -> tuple[Any, tuple[str, ...]]:
    """The options a stored session opens with: in its own directory, under that project's
    configuration as `rawtrio --resume` gives it (resolved before the current session is
    left, so a bad file there changes nothing). `UsageError` when the directory is gone."""
    cwd = Path(record.cwd)
    if not await trio.Path(cwd).is_dir():
        raise UsageError(f"session {record.id} works in {record.cwd}, which is gone")
    if make is not None and cwd != options.cwd:
        return await make(cwd)
    return options.in_directory(cwd), ()


def session_line(record: SessionRecord) -> str:
    """A stored session in the `/sessions` list: id prefix, last change, size, title."""
    stamp = time.strftime("%m-%d %H:%M", time.localtime(record.updated_at))
    return f"{record.id[:8]}  {stamp}  {record.message_count:>4} msgs  {record.title or 'untitled'}"
