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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Where each name lives. Imported on first use (PEP 562), so that importing one light
#: module of the package (the transcript view, which the terminal chat draws its first
#: frame with) does not load the whole runtime, its tools and the config schema first.
_WHERE: dict[str, str] = {
    "ProviderFactory": "rawtrio.runtime.runtime",
    "RegistryFactory": "rawtrio.runtime.runtime",
    "Runtime": "rawtrio.runtime.runtime",
    "default_registry": "rawtrio.runtime.runtime",
    "open_runtime": "rawtrio.runtime.runtime",
    "Session": "rawtrio.runtime.session",
    "SessionOptions": "rawtrio.runtime.session",
    "Subscription": "rawtrio.runtime.subscribers",
    "LOCAL": "rawtrio.tools.backend",
    "Backend": "rawtrio.tools.backend",
    "FileInfo": "rawtrio.tools.backend",
    "LineWindow": "rawtrio.tools.backend",
    "fill_window": "rawtrio.tools.backend",
    "Handler": "rawtrio.tools.base",
    "Tool": "rawtrio.tools.base",
    "ToolContext": "rawtrio.tools.base",
    "ToolOutput": "rawtrio.tools.base",
    "FileToolError": "rawtrio.tools.file_io",
    "ToolRegistry": "rawtrio.tools.registry",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
