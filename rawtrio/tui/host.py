"""What the chat's slash commands may use of the chat app (`ChatHost`), and what the app
starts with (`ChatSetup`).

The commands (`tui/commands.py`) take a `ChatHost`, not the `ChatApp` itself, so that the
app imports the commands and nothing imports back: the app is the one place that wires
the screen, and the commands see only the operations they need.

What the chat uses of the runtime and of a session is spelled out as protocols
(`ChatRuntime`, `ChatSession`): a local `Runtime` and `Session` are those, and so are the
`RemoteRuntime` and `RemoteSession` of a chat attached to a host (`rawtrio.host.remote`),
so the chat is the same program either way. Session options are the runtime's own
(`SessionOptions` here, `RemoteOptions` attached): the chat reads only their `cwd` and
hands them back to the runtime that gave them (`ChatOptions`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import trio

    from rawtrio import events as ev
    from rawtrio.context.accounting import UsageTotals
    from rawtrio.permissions.approval import ApprovalDecision
    from rawtrio.permissions.rules import PermissionMode
    from rawtrio.store.base import SessionRecord
    from rawtrio.tui.blocks import Transcript
    from rawtrio.tui.editor import PromptEdit

#: A runtime's session options (`SessionOptions`, or `RemoteOptions` attached to a host):
#: the chat reads `cwd`, moves them to a resumed session's directory (`in_directory`) and
#: gives them back to the runtime they came from.
ChatOptions = Any


class ChatSubscription(Protocol):
    """A session's live events (`Session.subscribe()`)."""

    lagged: bool

    def __enter__(self) -> ChatSubscription: ...

    def __exit__(self, *exc: Any) -> None: ...

    def __aiter__(self) -> ChatSubscription: ...

    async def __anext__(self) -> ev.Event: ...


class ModeHolder(Protocol):
    @property
    def mode(self) -> PermissionMode: ...


class ChatSession(Protocol):
    """What the chat uses of a `Session` (docs/contracts.md, "The application")."""

    @property
    def id(self) -> str: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def model_name(self) -> str: ...

    @property
    def model_names(self) -> tuple[str, ...]: ...

    @property
    def usage(self) -> UsageTotals: ...

    @property
    def running_turn(self) -> str | None: ...

    @property
    def closed(self) -> bool: ...

    @property
    def policy(self) -> ModeHolder: ...

    def subscribe(self) -> ChatSubscription: ...

    async def events_since(self, seq: int) -> list[ev.Event]: ...

    async def submit(self, text: str) -> str: ...

    def cancel(self, reason: str = ...) -> bool: ...

    def answer_permission(self, request_id: str, decision: ApprovalDecision) -> None: ...

    def set_mode(self, mode: PermissionMode | str) -> None: ...

    async def set_model(self, name: str) -> None: ...

    async def compact(self, focus: str | None = None) -> ev.CompactionEnded: ...

    async def close(self, reason: str = ...) -> None: ...


class ChatRuntime(Protocol):
    """What the chat uses of a `Runtime`."""

    async def create_session(self, options: ChatOptions) -> ChatSession: ...

    async def open_session(self, session_id: str, options: ChatOptions) -> ChatSession: ...

    async def fork_session(
        self, source_id: str, *, before_turn: str | None = None, title: str | None = None
    ) -> str: ...

    async def get_session(self, session_id: str) -> SessionRecord: ...

    async def list_sessions(self, *, cwd: str | None = None) -> list[SessionRecord]: ...

    async def delete_session(self, session_id: str) -> None: ...


@dataclass
class ChatSetup:
    """What the app starts with; `runtime` stays None until the boot task configures it
    (`ChatApp.configure`), and for good when no model is configured (`show_guide`)."""

    runtime: ChatRuntime | None
    options: ChatOptions | None
    agent: str
    history_path: Path | None
    #: Shown at the top of the chat (first-run guide, demo introduction).
    banner: list[Any] = field(default_factory=list)
    #: Prompts pre-filled one after the other (the demo's script).
    script: list[str] = field(default_factory=list)
    #: Makes new options for `/agent NAME` (None where agents cannot change).
    options_for_agent: Callable[[str], Any] | None = None
    #: Makes the options of a session `/resume` opens in another directory: that
    #: project's configuration, with the chat's user configuration and flags (awaited: the
    #: options and the configuration notices). None (attached to a host, which resolves
    #: them there): the chat's options moved with `in_directory`.
    options_for_cwd: Callable[[Path], Any] | None = None
    #: The directory rawtrio was launched in (`--cwd`, else the current one): `/new` and
    #: `/agent NAME` start their sessions there, also after `rawtrio --resume ID` opened a
    #: session of another directory (whose configuration applies to that session only).
    #: None: where `options` say.
    launch_dir: Path | None = None


class ChatHost(Protocol):
    """The chat app as the slash commands see it."""

    setup: ChatSetup
    nursery: trio.Nursery
    runtime: ChatRuntime | None
    options: ChatOptions | None
    agent: str
    session: ChatSession | None
    transcript: Transcript
    #: The input editor (`/rewind` puts the rewound prompt back in it).
    edit: PromptEdit
    next_action: str | None
    compacting: bool
    activity: trio.Event

    @property
    def busy(self) -> bool: ...

    async def attach(self, session: ChatSession, *, created: bool, show_history: bool) -> None: ...

    async def leave_session(self) -> None: ...

    def open_picker(self, picker: Any) -> None: ...

    def screen_size(self) -> tuple[int, int]: ...

    def request_exit(self, code: int = 0) -> None: ...

    def refresh_status(self) -> None: ...
