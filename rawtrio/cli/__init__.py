"""The command-line front ends: the entry point, headless runs, the line chat, the
`sessions`, `config` and `mcp` commands, and the signal handling they share.

Kept empty on purpose: `rawtrio --version` imports this package on its way to
`rawtrio.cli.entry` and must stay instant.
"""
