"""Files and commands through the editor: the client's `fs/*` and `terminal/*` methods.

When a client attached to the session advertised `fs.readTextFile` / `fs.writeTextFile`,
the file tools (`read_file`, `write_file`, `edit_file`) read and write through it, so the
model sees unsaved buffers and edits land in the editor (which shows and saves them).
This is done without touching the tools or the runtime: the ACP front end builds each
session's registry (`EditorRouter.registry`) with those tools' handlers wrapped, and a
wrapped handler swaps `ctx.backend.fs` for `EditorFiles` when such a client is attached
at call time. `stat` stays local (ACP has no stat); directory tools walk the disk.
Likewise a foreground `bash` command runs in the editor's terminal when the client offers
`terminal` (`rawtrio.acp.editor_terminal`).

A cancelled call cancels its request (`$/cancel_request` goes to the client); a client
error or a dropped connection becomes an `OSError`, which the tool reports as its result.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from rawtrio.acp.editor_terminal import EditorTerminal, ask_editor
from rawtrio.acp.jsonrpc import Peer
from rawtrio.runtime import (
    LOCAL,
    Backend,
    FileInfo,
    FileToolError,
    Handler,
    LineWindow,
    SessionOptions,
    Tool,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    default_registry,
    fill_window,
)

if TYPE_CHECKING:
    from rawtrio.acp.agent import AcpAgent
    from rawtrio.acp.live import LiveSession

#: The tools whose file access can go through the editor.
FILE_TOOLS: Final = frozenset({"read_file", "write_file", "edit_file"})


class EditorFiles:
    """A `FileBackend` that reads and/or writes through one ACP client."""

    def __init__(self, peer: Peer, session_id: str, *, read: bool, write: bool) -> None:
        self.peer = peer
        self.session_id = session_id
        self.read = read
        self.write = write

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        return await ask_editor(self.peer, self.session_id, method, params)

    async def stat(self, path: Path) -> FileInfo:
        return await LOCAL.fs.stat(path)

    async def read_bytes(self, path: Path, *, max_bytes: int) -> bytes:
        if not self.read:
            return await LOCAL.fs.read_bytes(path, max_bytes=max_bytes)
        result = await self._call("fs/read_text_file", {"path": str(path)})
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise OSError(f"the editor sent no content for {path}")
        data = content.encode("utf-8")
        if len(data) > max_bytes:
            raise FileToolError(
                f"{path} is too large ({len(data)} bytes; the limit is {max_bytes})"
            )
        return data

    async def read_lines(self, path: Path, *, first: int, limit: int, max_bytes: int) -> LineWindow:
        if not self.read:
            return await LOCAL.fs.read_lines(path, first=first, limit=limit, max_bytes=max_bytes)
        data = await self.read_bytes(path, max_bytes=1 << 30)
        return window_of(data, first=first, limit=limit, max_bytes=max_bytes)

    async def write_bytes(self, path: Path, data: bytes) -> bool:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if not self.write or text is None:  # binary content is written locally
            return await LOCAL.fs.write_bytes(path, data)
        created = not await trio.to_thread.run_sync(path.exists)
        await self._call("fs/write_text_file", {"path": str(path), "content": text})
        return created


def window_of(data: bytes, *, first: int, limit: int, max_bytes: int) -> LineWindow:
    """The `LineWindow` the local backend reports, computed from text already read."""
    window = LineWindow(first=first, size=len(data))
    return fill_window(window, io.BytesIO(data), limit=limit, max_bytes=max_bytes)


class EditorRouter:
    """Builds sessions' registries whose file tools use an attached editor when there is one."""

    def __init__(self) -> None:
        self.agent: AcpAgent | None = None

    def registry(self, options: SessionOptions) -> ToolRegistry:
        return default_registry(options, wrap=self._route)

    def _route(self, tool: Tool) -> Tool:
        if tool.id in FILE_TOOLS:
            return dataclasses.replace(tool, handler=self._files_in_editor(tool.handler))
        if tool.id == "bash":
            return dataclasses.replace(tool, handler=self._commands_in_editor(tool.handler))
        return tool

    def _live(self, ctx: ToolContext) -> LiveSession | None:
        return self.agent.sessions.get(ctx.session_id) if self.agent else None

    def _files_in_editor(self, inner: Handler) -> Handler:
        async def handler(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
            live = self._live(ctx)
            client = live.client_with("fs_read", "fs_write") if live is not None else None
            if client is not None:
                files = EditorFiles(
                    client.peer, ctx.session_id, read=client.fs_read, write=client.fs_write
                )
                ctx.backend = Backend(files, ctx.backend.proc)
            return await inner(ctx, args)

        return handler

    def _commands_in_editor(self, inner: Handler) -> Handler:
        async def handler(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
            live = self._live(ctx)
            client = live.client_with("terminal") if live is not None else None
            if live is not None and client is not None and not args.get("background"):
                shown = live  # the session whose clients see the terminal

                def on_terminal(terminal_id: str) -> None:
                    shown.show_terminal(ctx.call_id, terminal_id)

                commands = EditorTerminal(
                    client.peer, ctx.session_id, on_terminal, base_env=ctx.env
                )
                ctx.backend = Backend(ctx.backend.fs, commands)
            return await inner(ctx, args)

        return handler
