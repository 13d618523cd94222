"""Compatibility with other agents' files and conventions (docs/compat.md).

Foundation layer: pure mappings (names, shapes, syntax) that the config, hooks and
permissions packages share, so each mapping is written down once.
"""
