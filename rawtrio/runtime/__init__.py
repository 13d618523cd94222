"""The runtime's public API: what front ends and the application import (from here, never
from the modules below, which may move).

`Runtime` (one per process) → `Session` (a nursery) → turn → steps → tool calls; the
session operations a front end uses are methods of `Runtime` and `Session`
(docs/contracts.md, "The application: open_app"). `open_runtime` is for the composition
root (`rawtrio.app`) and tests; `default_registry` / `RegistryFactory` let a front end
build a session's tools differently (ACP's editor-backed files and terminals), with the
tool interfaces re-exported below (`ToolRegistry`, `Tool`, `Handler`, `ToolContext`,
`ToolOutput`, the file `Backend` and its values, `FileToolError`).
"""

from __future__ import annotations

from rawtrio.runtime.runtime import (
    ProviderFactory,
    RegistryFactory,
    Runtime,
    default_registry,
    open_runtime,
)
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.runtime.subscribers import Subscription
from rawtrio.tools.backend import LOCAL, Backend, FileInfo, LineWindow, fill_window
from rawtrio.tools.base import Handler, Tool, ToolContext, ToolOutput
from rawtrio.tools.file_io import FileToolError
from rawtrio.tools.registry import ToolRegistry

__all__ = [
    "LOCAL",
    "Backend",
    "FileInfo",
    "FileToolError",
    "Handler",
    "LineWindow",
    "ProviderFactory",
    "RegistryFactory",
    "Runtime",
    "Session",
    "SessionOptions",
    "Subscription",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "default_registry",
    "fill_window",
    "open_runtime",
]
