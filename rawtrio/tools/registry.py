"""The tool registry: the one path by which built-in, MCP and user tools reach the model.

A tool has a namespaced id (`read_file`, `mcp/github/create_issue`); providers accept only
names matching `^[a-zA-Z0-9_-]{1,64}$`. `register()` assigns each tool its provider name
once, and `lookup()` maps the name the model calls back to the tool.

The name mapping is deterministic for a given registration order (so the request prefix is
stable across sessions and provider caches keep working):

1. `/` becomes `__`, every other character outside `[a-zA-Z0-9_-]` becomes `_`
   (`mcp/some server/tool` → `mcp__some_server__tool`);
2. a name over 64 characters is cut and ends in `_` + 8 hex digits of the id's SHA-256;
3. a name already taken by another tool gets the hash suffix too (and, should even that
   be taken, a counter), so two tools never share a name.

Arguments are checked against the tool's JSON Schema (Draft 2020-12) by `validate()`,
with one validator per tool, built at its first call. A schema from outside (MCP servers,
user tools) is checked at registration; the built-ins' schemas are checked by the test
suite instead, so a session that uses only built-ins does not import `jsonschema` (~100 ms)
before its first request.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from rawtrio.contracts import BUILTIN_TOOL_NAMES, PROVIDER_TOOL_NAME_RE
from rawtrio.frozen import FrozenJSON, json_type_name, thaw
from rawtrio.providers.base import ToolSpec
from rawtrio.tools.base import Tool

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

_MAX_NAME: Final = 64
_HASH_LEN: Final = 8
_INVALID_CHARS: Final = re.compile(r"[^a-zA-Z0-9_-]")
#: At most this many problems are listed in one validation message.
_MAX_PROBLEMS: Final = 10


class ToolRegistry:
    """The tools a session offers, in registration order."""

    def __init__(self) -> None:
        self._by_id: dict[str, Tool] = {}
        self._name_of: dict[str, str] = {}
        self._by_name: dict[str, Tool] = {}
        self._validators: dict[str, Draft202012Validator] = {}

    def register(self, tool: Tool) -> None:
        """Add a tool. ValueError on an empty or duplicate id or an invalid schema."""
        if not tool.id:
            raise ValueError("tool id must not be empty")
        if tool.id in self._by_id:
            raise ValueError(f"a tool with id {tool.id!r} is already registered")
        _check_schema(tool, full=tool.id not in BUILTIN_TOOL_NAMES)
        name = self.provider_name(tool.id)
        assert PROVIDER_TOOL_NAME_RE.match(name), name
        self._by_id[tool.id] = tool
        self._name_of[tool.id] = name
        self._by_name[name] = tool

    def provider_name(self, tool_id: str) -> str:
        """The name sent to providers for `tool_id`.

        For a registered tool, the name it was given; for any other id, the name it would
        get if it were registered next.
        """
        if (name := self._name_of.get(tool_id)) is not None:
            return name
        base = _sanitize(tool_id)
        suffix = _hash_suffix(tool_id)
        if len(base) > _MAX_NAME:
            base = base[: _MAX_NAME - len(suffix)] + suffix
        if base not in self._by_name:
            return base
        hashed = base[: _MAX_NAME - len(suffix)] + suffix
        candidate, n = hashed, 2
        while candidate in self._by_name:
            counter = f"_{n}"
            candidate = hashed[: _MAX_NAME - len(counter)] + counter
            n += 1
        return candidate

    def lookup(self, provider_name: str) -> Tool | None:
        return self._by_name.get(provider_name)

    def get(self, tool_id: str) -> Tool | None:
        """The tool registered under `tool_id` (not its provider name)."""
        return self._by_id.get(tool_id)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What the model is told about the tools, in registration order."""
        return tuple(
            ToolSpec(self._name_of[t.id], t.description, t.input_schema)
            for t in self._by_id.values()
        )

    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._by_id.values())

    def validate(self, tool: Tool, arguments: FrozenJSON | None) -> str | None:
        """None when `arguments` fit the tool's schema, else a message for the model.

        `arguments is None` means the model's raw argument text was not valid JSON.
        """
        name = self._name_of.get(tool.id, tool.id)
        if arguments is None:
            return (
                f"The arguments for tool {name!r} were not valid JSON. Call the tool again "
                f"with a single JSON object that matches its input schema."
            )
        if self._by_id.get(tool.id) is not tool:
            _check_schema(tool, full=True)
            validator = _validator_for(tool)
        elif tool.id in self._validators:
            validator = self._validators[tool.id]
        else:
            validator = self._validators[tool.id] = _validator_for(tool)
        instance = thaw(arguments)
        if not isinstance(instance, dict):
            return (
                f"The arguments for tool {name!r} must be a JSON object, "
                f"not {json_type_name(instance)}."
            )
        errors = sorted(validator.iter_errors(instance), key=_error_sort_key)
        if not errors:
            return None
        # dict.fromkeys: one "missing" line even when several required fields are missing.
        lines = list(dict.fromkeys(f"- {_describe(e)}" for e in errors))
        problems = lines[:_MAX_PROBLEMS]
        if len(lines) > _MAX_PROBLEMS:
            problems.append(f"- … and {len(lines) - _MAX_PROBLEMS} more")
        return f"Invalid arguments for tool {name!r}:\n" + "\n".join(problems)

    def __contains__(self, tool_id: object) -> bool:
        """Whether a tool with this id (not provider name) is registered."""
        return tool_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._by_id.values())


def _check_schema(tool: Tool, *, full: bool) -> None:
    """ValueError unless the schema is an object schema (and, `full`, valid Draft 2020-12)."""
    schema = thaw(tool.input_schema)
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError(
            f'tool {tool.id!r}: input_schema must be a JSON Schema with "type": "object"'
        )
    if not full:
        return
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        raise ValueError(f"tool {tool.id!r}: invalid input_schema: {e.message}") from None


def _validator_for(tool: Tool) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(thaw(tool.input_schema))


def _sanitize(tool_id: str) -> str:
    return _INVALID_CHARS.sub("_", tool_id.replace("/", "__")) or "_"


def _hash_suffix(tool_id: str) -> str:
    return "_" + hashlib.sha256(tool_id.encode("utf-8")).hexdigest()[:_HASH_LEN]


def _error_sort_key(error: ValidationError) -> tuple[str, str]:
    return ("/".join(str(p) for p in error.absolute_path), str(error.validator))


def _field(error: ValidationError) -> str:
    path = "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p))
        for i, p in enumerate(error.absolute_path)
    )
    return f"field {path!r}" if path else "the arguments"


def _describe(error: ValidationError) -> str:
    """One line naming the bad field and what was expected."""
    where = _field(error)
    kind, value = error.validator, error.instance
    expected: Any = error.validator_value
    schema: Any = error.schema
    if kind == "required" and isinstance(value, Mapping):
        missing = [k for k in expected if k not in value]
        return f"{where}: missing required field(s) {', '.join(map(repr, missing))}"
    if kind == "additionalProperties" and isinstance(value, Mapping):
        allowed = set(schema.get("properties", {})) if isinstance(schema, Mapping) else set()
        extra = [k for k in value if k not in allowed]
        known = ", ".join(map(repr, sorted(allowed))) or "none"
        return f"{where}: unexpected field(s) {', '.join(map(repr, extra))} (allowed: {known})"
    if kind == "type":
        wanted = " or ".join(expected) if isinstance(expected, list) else expected
        return f"{where}: expected {wanted}, got {json_type_name(value)} ({_short(value)})"
    if kind == "enum":
        options = ", ".join(map(repr, expected))
        return f"{where}: expected one of {options}, got {_short(value)}"
    return f"{where}: {error.message}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
