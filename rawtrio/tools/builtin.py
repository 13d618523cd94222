"""The built-in tools, registered through the same `register()` path as any extension.

Their names are fixed in `rawtrio.contracts.BUILTIN_TOOL_NAMES`, plus `bash_output` and
`bash_stop` for background jobs, and `task` (subagents).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Final

from rawtrio.tools.background_tools import bash_output_tool, bash_stop_tool
from rawtrio.tools.base import Tool
from rawtrio.tools.bash import bash_tool
from rawtrio.tools.edit_file import edit_file_tool
from rawtrio.tools.glob_files import glob_tool
from rawtrio.tools.grep import grep_tool
from rawtrio.tools.list_dir import list_dir_tool
from rawtrio.tools.read_file import read_file_tool
from rawtrio.tools.registry import ToolRegistry
from rawtrio.tools.settings import ToolSettings
from rawtrio.tools.task import task_tool
from rawtrio.tools.todo_tools import todo_read_tool, todo_write_tool
from rawtrio.tools.write_file import write_file_tool

#: The built-ins available now, in the order the model is told about them.
_FACTORIES: Final[dict[str, Callable[[ToolSettings], Tool]]] = {
    "read_file": lambda _settings: read_file_tool(),
    "write_file": lambda _settings: write_file_tool(),
    "edit_file": lambda _settings: edit_file_tool(),
    "list_dir": lambda _settings: list_dir_tool(),
    "glob": lambda _settings: glob_tool(),
    "grep": lambda _settings: grep_tool(),
    "bash": bash_tool,
    "bash_output": lambda _settings: bash_output_tool(),
    "bash_stop": lambda _settings: bash_stop_tool(),
    "todo_write": lambda _settings: todo_write_tool(),
    "todo_read": lambda _settings: todo_read_tool(),
    "task": task_tool,
}

AVAILABLE_BUILTINS: Final = tuple(_FACTORIES)


def builtin_registry(
    settings: ToolSettings | None = None,
    *,
    only: Collection[str] | None = None,
    registry: ToolRegistry | None = None,
) -> ToolRegistry:
    """A registry holding the built-in tools (or those named in `only`).

    `settings` fill in descriptions (e.g. bash's default timeout); each call still obeys
    its `ToolContext.settings`. Pass `registry` to add the built-ins to an existing one.
    ValueError names any unknown tool in `only`.
    """
    settings = settings if settings is not None else ToolSettings()
    if only is not None:
        unknown = sorted(set(only) - set(_FACTORIES))
        if unknown:
            raise ValueError(
                f"unknown built-in tool(s): {', '.join(unknown)} "
                f"(available: {', '.join(AVAILABLE_BUILTINS)})"
            )
    registry = registry if registry is not None else ToolRegistry()
    for name, factory in _FACTORIES.items():
        if only is None or name in only:
            registry.register(factory(settings))
    return registry
