"""Configuration errors with structured fields, and pydantic errors turned into them.

Every problem reads `FILE: KEY.PATH: expected WHAT, got VALUE`, for example
`~/.config/rawtrio/config.toml: agents.coder.max_steps: expected a positive integer, got -1`.
A `ConfigFileError` carries one or more `ConfigProblem`s, so one run reports every mistake
in a file at once instead of one per attempt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

from rawtrio.errors import ConfigError

if TYPE_CHECKING:  # pydantic loads only when a config file is validated
    from pydantic import BaseModel, ValidationError
    from pydantic_core import ErrorDetails

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One mistake. `source` is a file path, an environment variable or a flag."""

    source: str
    key_path: str
    expected: str
    got: str | None = None

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        key = f"{self.key_path}: " if self.key_path else ""
        got = f", got {self.got}" if self.got is not None else ""
        return f"{where}{key}{self.expected}{got}"


class ConfigFileError(ConfigError):
    """Bad configuration; `problems` lists each mistake, the first one's fields are copied."""

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        assert problems
        self.problems = tuple(problems)
        first = self.problems[0]
        self.source, self.key_path = first.source, first.key_path
        self.expected, self.got = first.expected, first.got
        super().__init__("\n".join(str(p) for p in self.problems))


def problem(source: str | Path, key_path: str, expected: str, got: Any = None) -> ConfigProblem:
    return ConfigProblem(str(source), key_path, expected, None if got is None else show(got))


def show(value: Any) -> str:
    """A short rendering of a bad value, TOML-like."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def key_path(loc: Iterable[str | int]) -> str:
    """`("agents", "coder", "permissions", 2, "effect")` → `agents.coder.permissions[2].effect`;
    keys that are not bare TOML keys are quoted."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            bare = part and all(c.isalnum() or c in "_-" for c in part)
            text = part if bare else json.dumps(part)
            out += f".{text}" if out else text
    return out


def from_validation_error(
    error: ValidationError, model: type[BaseModel], source_of: Callable[[Loc], str]
) -> ConfigFileError:
    """Turn pydantic's errors into problems; `source_of(loc)` names the file for a key."""
    return from_error_details(error.errors(include_url=False), model, source_of)


def from_error_details(
    details: Iterable[ErrorDetails], model: type[BaseModel], source_of: Callable[[Loc], str]
) -> ConfigFileError:
    problems: list[ConfigProblem] = []
    for detail in details:
        loc: Loc = tuple(detail["loc"])
        problems.append(_problem_for(detail, loc, model, source_of(loc)))
    return ConfigFileError(list(dict.fromkeys(problems)))


def _problem_for(
    detail: ErrorDetails, loc: Loc, model: type[BaseModel], source: str
) -> ConfigProblem:
    kind = detail["type"]
    ctx: dict[str, Any] = dict(detail.get("ctx") or {})
    value = detail.get("input")
    if kind == "extra_forbidden":
        known = _known_keys(model, loc[:-1])
        name = str(loc[-1])
        import difflib  # only to report an unknown key

        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        allowed = ", ".join(sorted(known)) or "none"
        return ConfigProblem(source, key_path(loc), f"unknown key{hint}; known keys: {allowed}")
    if kind == "missing":
        return ConfigProblem(source, key_path(loc), "required key is missing")
    if kind == "regex_invalid":
        expected = "expected a valid regular expression"
        return ConfigProblem(source, key_path((*loc, "regex")), expected, show(ctx.get("error")))
    if kind == "value_error":
        return ConfigProblem(source, key_path(loc), detail["msg"].removeprefix("Value error, "))
    if kind == "greater_than" and ctx.get("gt") == 0:
        whole = _strip_optional(_type_at(model, loc)) is int
        expected = "expected a positive integer" if whole else "expected a positive number"
        return ConfigProblem(source, key_path(loc), expected, show(value))
    return ConfigProblem(source, key_path(loc), _expected(kind, ctx, detail["msg"]), show(value))


def _expected(kind: str, ctx: dict[str, Any], msg: str) -> str:
    simple = {
        "int_type": "expected an integer",
        "int_parsing": "expected an integer",
        "int_from_float": "expected an integer",
        "float_type": "expected a number",
        "float_parsing": "expected a number",
        "string_type": "expected a string",
        "bool_type": "expected true or false",
        "list_type": "expected an array",
        "dict_type": "expected a table",
        "model_type": "expected a table",
        "model_attributes_type": "expected a table",
    }
    if kind in simple:
        return simple[kind]
    if kind == "greater_than":
        return f"expected a number > {ctx.get('gt')}"
    if kind == "greater_than_equal":
        return f"expected a number >= {ctx.get('ge')}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}"
    if kind == "string_too_short":
        return "expected a non-empty string"
    if kind == "too_short":
        return f"expected at least {ctx.get('min_length')} item(s)"
    if kind == "string_pattern_mismatch":
        return "expected an argument path like `command` or `edits[*].path`"
    if kind == "value_error":
        return msg.removeprefix("Value error, ")
    return "expected " + msg.removeprefix("Input should be ").rstrip(".")


def _known_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    """The field names of the table at `loc` (best effort, for "did you mean")."""
    from pydantic import BaseModel

    current = _strip_optional(_type_at(model, loc))
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _type_at(model: type[BaseModel], loc: Loc) -> Any:
    """The annotation of the value at `loc` (None when the walk gets lost)."""
    from pydantic import BaseModel

    current: Any = model
    for part in loc:
        current = _strip_optional(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = field.annotation
        elif get_origin(current) in (dict, list):
            current = get_args(current)[-1]
        else:
            return None
    return current


def _strip_optional(tp: Any) -> Any:
    args = [a for a in get_args(tp) if a is not type(None)]
    if get_origin(tp) is not None and get_origin(tp) not in (dict, list) and len(args) == 1:
        return _strip_optional(args[0])
    if hasattr(tp, "__metadata__"):  # Annotated
        return _strip_optional(get_args(tp)[0])
    return tp
