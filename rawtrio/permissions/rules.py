"""Permission rules: which tool calls run, ask first, or are refused.

An agent has an ordered list of rules `{match, effect, when}`; for a call, the **last**
matching rule wins (so later, more specific rules override earlier, broader ones, and a
project's rules, merged after the user's, win over them). `match` is a glob over tool ids
(`bash`, `mcp/github/*`); `when`, if given, narrows a rule to calls where a value at an
argument path (`command`, `edits[*].path`) matches a regular expression (`re.search`).

Without a matching rule, read-only tools are allowed and the others ask.

Modes decide at call time, after the rules, and never change the tool list (so switching
keeps the provider's prompt cache):

- `default`: the rules as written;
- `accept-edits`: file edits (`write_file`, `edit_file`) that would ask are allowed;
- `plan`: only read-only tools run; everything else is denied by the mode;
- `bypass`: everything that would ask is allowed.

No mode overrides a `deny` rule. An unconditional `deny` that no later rule can undo hides
the tool from the model entirely (`hidden_tools`); a conditional one denies matching calls.
"""

from __future__ import annotations

import enum
import fnmatch
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rawtrio.contracts import DeniedBy
from rawtrio.frozen import thaw


class Effect(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class PermissionMode(enum.StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    PLAN = "plan"
    BYPASS = "bypass"


#: The tools `accept-edits` lets through without asking.
EDIT_TOOLS: Final = frozenset({"write_file", "edit_file"})
_PATH_PART: Final = re.compile(r"\[(\*|\d+)\]|\.?([A-Za-z_][\w-]*)")


@dataclass(frozen=True, slots=True)
class When:
    path: str
    regex: re.Pattern[str]

    def matches(self, arguments: Mapping[str, Any]) -> bool:
        return any(self.regex.search(_as_text(v)) for v in argument_values(arguments, self.path))


@dataclass(frozen=True, slots=True)
class Rule:
    match: str
    effect: Effect
    when: When | None = None
    #: Where the rule was written ("FILE: agents.coder.permissions[2]", "this session").
    origin: str = ""

    def applies(self, tool_id: str, arguments: Mapping[str, Any]) -> bool:
        if not fnmatch.fnmatchcase(tool_id, self.match):
            return False
        return self.when is None or self.when.matches(arguments)

    def describe(self) -> str:
        cond = f" when {self.when.path} ~ /{self.when.regex.pattern}/" if self.when else ""
        where = f" ({self.origin})" if self.origin else ""
        return f"{self.effect} {self.match}{cond}{where}"


@dataclass(frozen=True, slots=True)
class Decision:
    effect: Effect
    #: One sentence for people and for the model.
    reason: str
    rule: Rule | None = None
    #: Set for `deny`: who refused (rule, mode, policy, user, hook).
    denied_by: DeniedBy | None = None


def make_rule(
    match: str,
    effect: Effect | str,
    when_path: str | None = None,
    when_regex: str | None = None,
    origin: str = "",
) -> Rule:
    when = None
    if when_path is not None and when_regex is not None:
        when = When(when_path, re.compile(when_regex))
    return Rule(match, Effect(effect), when, origin)


def evaluate(
    rules: Sequence[Rule],
    tool_id: str,
    arguments: Mapping[str, Any],
    *,
    read_only: bool,
    mode: PermissionMode = PermissionMode.DEFAULT,
    edit_tools: frozenset[str] = EDIT_TOOLS,
) -> Decision:
    """Decide one call: the last matching rule, then the mode."""
    rule = next((r for r in reversed(rules) if r.applies(tool_id, arguments)), None)
    if rule is not None and rule.effect is Effect.DENY:
        return Decision(Effect.DENY, f"denied by rule {rule.describe()}", rule, DeniedBy.RULE)
    if mode is PermissionMode.PLAN and not read_only:
        return Decision(
            Effect.DENY,
            f"plan mode allows only read-only tools; {tool_id} can change things",
            rule,
            DeniedBy.MODE,
        )
    if rule is not None:
        effect, reason = rule.effect, f"rule {rule.describe()}"
    elif read_only:
        effect, reason = Effect.ALLOW, f"{tool_id} is read-only"
    else:
        effect, reason = Effect.ASK, f"{tool_id} can change things and no rule allows it"
    if effect is Effect.ASK and mode is PermissionMode.BYPASS:
        return Decision(Effect.ALLOW, f"bypass mode ({reason})", rule)
    if effect is Effect.ASK and mode is PermissionMode.ACCEPT_EDITS and tool_id in edit_tools:
        return Decision(Effect.ALLOW, f"accept-edits mode ({reason})", rule)
    return Decision(effect, reason, rule)


def hidden_tools(rules: Sequence[Rule], tool_ids: Iterable[str]) -> frozenset[str]:
    """The tools every call of which would be denied by a rule: never shown to the model."""
    hidden: set[str] = set()
    for tool_id in tool_ids:
        for rule in reversed(rules):
            if not fnmatch.fnmatchcase(tool_id, rule.match):
                continue
            if rule.when is None:
                if rule.effect is Effect.DENY:
                    hidden.add(tool_id)
                break
            if rule.effect is not Effect.DENY:
                break  # some calls may be allowed
    return frozenset(hidden)


def argument_values(arguments: Any, path: str) -> list[Any]:
    """The values at `path` in a call's arguments (`edits[*].path` can give several)."""
    current: list[Any] = [arguments]
    for index, key in _PATH_PART.findall(path):
        following: list[Any] = []
        for value in current:
            if key and isinstance(value, Mapping) and key in value:
                following.append(value[key])
            elif index == "*" and isinstance(value, list | tuple):
                following.extend(value)
            elif index.isdigit() and isinstance(value, list | tuple) and int(index) < len(value):
                following.append(value[int(index)])
        current = following
    return current


def glob_escape(tool_id: str) -> str:
    """A glob that matches exactly `tool_id`."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in tool_id)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(thaw(value), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)
