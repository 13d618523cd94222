"""What the chat's slash commands may use of the chat app (`ChatHost`), and what the app
starts with (`ChatSetup`).

The commands (`tui/commands.py`) take a `ChatHost`, not the `ChatApp` itself, so that the
app imports the commands and nothing imports back: the app is the one place that wires
the screen, and the commands see only the operations they need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import trio

    from rawtrio.runtime import Runtime, Session, SessionOptions
    from rawtrio.tui.blocks import Transcript


@dataclass
class ChatSetup:
    """What the app starts with; `runtime` stays None until the boot task configures it
    (`ChatApp.configure`), and for good when no model is configured (`show_guide`)."""

    runtime: Runtime | None
    options: SessionOptions | None
    agent: str
    history_path: Path | None
    #: Shown at the top of the chat (first-run guide, demo introduction).
    banner: list[Any] = field(default_factory=list)
    #: Prompts pre-filled one after the other (the demo's script).
    script: list[str] = field(default_factory=list)
    #: Makes new options for `/agent NAME` (None where agents cannot change).
    options_for_agent: Callable[[str], Any] | None = None


class ChatHost(Protocol):
    """The chat app as the slash commands see it."""

    setup: ChatSetup
    nursery: trio.Nursery
    runtime: Runtime | None
    options: SessionOptions | None
    agent: str
    session: Session | None
    transcript: Transcript
    next_action: str | None
    compacting: bool
    activity: trio.Event

    @property
    def busy(self) -> bool: ...

    async def attach(self, session: Session, *, created: bool, show_history: bool) -> None: ...

    async def leave_session(self) -> None: ...

    def open_picker(self, picker: Any) -> None: ...

    def request_exit(self, code: int = 0) -> None: ...

    def refresh_status(self) -> None: ...
