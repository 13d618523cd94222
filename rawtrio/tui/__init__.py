"""The terminal chat: a full-screen urwid front end on trio (docs/tui.md).

`main(args, latch)` is what `rawtrio` without `-p` runs when stdin and stdout are a
terminal. The modules: `runner` (start, signals, the way out), `app` (state and keys),
`blocks` (the transcript), `markdown` (streaming-safe rendering), `editor` (the prompt),
`permission` (the approval modal), `commands` (slash commands), `demo` (the offline demo).
"""

from __future__ import annotations

from rawtrio.tui.runner import main

__all__ = ["main"]
