"""The terminal chat: a full-screen urwid front end on trio (docs/tui.md).

`rawtrio.tui.start.main(args, latch)` is what `rawtrio` without `-p` runs when stdin and
stdout are a terminal. The modules: `start` (a host to attach to, then the first frame, then
the rest), `first_frame` (that frame, drawn before trio and urwid are imported), `runner`
(the runtime, the screen, signals, the way out), `app` (state and keys), `blocks` (the
transcript), `markdown` (streaming-safe rendering), `editor` (the prompt), `permission`
(the approval modal), `trust` and `trust_prompt` (the trust question asked before a
session opens), `commands` (slash commands). The offline demo's script is the
application's (`rawtrio.app.demo`). Kept empty, so importing one module of
the package does not load the others.
"""
