"""Parsing a config file's bytes as TOML, with the limits every config read keeps: UTF-8,
valid TOML, tables and arrays nested at most `MAX_NESTING` deep (a deeper file is an error,
never a RecursionError). Light (no pydantic): `rawtrio.host.settings` reads the user file's
`[host]` table with it before a front end decides to attach."""

from __future__ import annotations

from typing import Any, Final

MAX_NESTING: Final = 64


class TomlProblem(ValueError):
    """What is wrong with the file, one line ("invalid TOML: ...")."""


def parse_toml(raw: bytes) -> dict[str, Any]:
    import tomllib  # only when a file exists: a run without config files never parses

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise TomlProblem(f"invalid TOML: {e}") from None
    except UnicodeDecodeError:
        raise TomlProblem("invalid TOML: the file is not UTF-8") from None
    except RecursionError:
        raise TomlProblem(_TOO_DEEP) from None
    if _depth(data) > MAX_NESTING:
        raise TomlProblem(_TOO_DEEP)
    return data


_TOO_DEEP: Final = f"invalid config: tables or arrays nested deeper than {MAX_NESTING}"


def _depth(data: Any) -> int:
    """How deep tables and arrays nest (iteratively: no recursion limit to hit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_NESTING:
            break
        children = value.values() if isinstance(value, dict) else value
        stack.extend((v, depth + 1) for v in children if isinstance(v, dict | list))
    return deepest
