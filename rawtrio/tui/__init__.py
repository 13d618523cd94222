"""The terminal chat: a full-screen urwid front end on trio (docs/tui.md).

`rawtrio.tui.runner.main(args, latch)` is what `rawtrio` without `-p` runs when stdin and
stdout are a terminal. The modules: `runner` (start, signals, the way out), `app` (state and
keys), `blocks` (the transcript), `markdown` (streaming-safe rendering), `editor` (the
prompt), `permission` (the approval modal), `trust` and `trust_prompt` (the trust question
asked before a session opens), `commands` (slash commands). The offline demo's
script is the application's (`rawtrio.app.demo`). Kept empty, so importing one module of
the package does not load the others.
"""
