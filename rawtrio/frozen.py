"""Deep-frozen JSON values, so subscribers get data they cannot change (turn contract §3.7)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

#: A JSON value as stored inside events and messages: mappings are read-only, arrays are tuples.
FrozenJSON = Any


def freeze(value: Any) -> FrozenJSON:
    """Return a deep, read-only copy of a JSON-like value."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def thaw(value: FrozenJSON) -> Any:
    """Return a plain, mutable JSON copy (dicts and lists) of a frozen value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


def json_type_name(value: Any) -> str:
    """How an error message names the JSON type of `value`: "a string", "an array", …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object"


EMPTY: FrozenJSON = MappingProxyType({})


def empty() -> FrozenJSON:
    """Default factory for frozen-mapping fields of dataclasses."""
    return EMPTY
