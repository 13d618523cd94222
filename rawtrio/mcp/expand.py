"""`${VAR}` and `${VAR:-default}` in MCP server settings, expanded when the server starts.

Claude Code's `.mcp.json` (and configs imported from it) write `"Bearer ${API_KEY}"`,
`"${HOME}/data"` or `"${PORT:-8080}"` anywhere in a server's command, arguments, URL,
working directory, environment and header values. rawtrio expands them the same way, from
the session's environment, each time the server starts — never when the config is read, so
`mcp list` and `config check` show the text as written and no value is kept in the
configuration. A variable that is unset (or empty, for the `:-` form's default) and has no
default is an error naming it. `$${` writes a literal `${`.

The values put in are secrets: the caller registers them with the session's redactor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

_REF: Final = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ExpansionError(ValueError):
    """A `${VAR}` whose variable is not set and that has no default."""

    def __init__(self, name: str, where: str) -> None:
        self.name = name
        super().__init__(
            f"{where}: environment variable {name} is not set (write ${{{name}:-…}} for a default)"
        )


def expand(text: str, env: Mapping[str, str], *, where: str = "value") -> tuple[str, list[str]]:
    """`text` with every `${…}` replaced, and the values that were put in."""
    used: list[str] = []

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$${":
            return "${"
        name, default = m.group(1), m.group(2)
        value = env.get(name)
        if default is not None and not value:
            return default
        if value is None:
            raise ExpansionError(name, where)
        used.append(value)
        return value

    return _REF.sub(sub, text), used


def has_refs(text: str) -> bool:
    return _REF.search(text) is not None
