"""One session's permission state: the agent's rules, rules allowed for this session, the
mode, and what a headless run does with `ask`.

The policy is the session's to own and change (`set_mode`, `allow_for_session`); it decides
calls at call time and never changes the tool list, which only the configured rules decide
(`hidden`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rawtrio.contracts import DeniedBy
from rawtrio.permissions.rules import (
    Decision,
    Effect,
    PermissionMode,
    Rule,
    evaluate,
    glob_escape,
    hidden_tools,
    make_rule,
)
from rawtrio.permissions.summary import key_value

if TYPE_CHECKING:  # the config models (pydantic) load only where config is read
    from rawtrio.config.schema import PermissionRuleConfig

SESSION_ORIGIN = "allowed for this session"


def rules_from_config(
    configs: Sequence[PermissionRuleConfig], origins: Sequence[str] = ()
) -> tuple[Rule, ...]:
    """Rules from the validated config; `origins[i]` names where rule i was written."""
    return tuple(
        make_rule(
            c.match,
            c.effect,
            c.when.path if c.when else None,
            c.when.regex if c.when else None,
            origins[i] if i < len(origins) else "",
        )
        for i, c in enumerate(configs)
    )


def allow_rule_for(
    tool_id: str, arguments: Mapping[str, Any], key_argument: str | None, origin: str = ""
) -> Rule:
    """The "allow always" rule for a call: this tool with this exact key argument
    (`bash` with exactly this `command`), or the whole tool when it has no key argument."""
    value = key_value(arguments, key_argument)
    if key_argument is None or value is None:
        return make_rule(glob_escape(tool_id), Effect.ALLOW, origin=origin)
    return make_rule(
        glob_escape(tool_id), Effect.ALLOW, key_argument, exact_regex(value), origin=origin
    )


def exact_regex(value: str) -> str:
    return rf"\A{re.escape(value)}\Z"


def with_hook_permission(decision: Decision, hook: str | None) -> Decision:
    """A Claude Code hook's `permissionDecision` applied to the rules' decision.

    `allow` skips the question a call would have asked (as in Claude Code, where it bypasses
    the permission prompt); `ask` asks even where a rule or the mode would allow. Neither
    undoes a `deny`: a deny rule, plan mode or the policy always win (rawtrio's own
    configuration is the source of truth). A hook's `deny` never reaches here: the call is
    refused before the rules are read."""
    if hook == "allow" and decision.effect is Effect.ASK:
        return Decision(
            Effect.ALLOW, f"allowed by a PreToolUse hook ({decision.reason})", decision.rule
        )
    if hook == "ask" and decision.effect is Effect.ALLOW:
        return Decision(Effect.ASK, f"a PreToolUse hook asks ({decision.reason})", decision.rule)
    return decision


class PermissionPolicy:
    def __init__(
        self,
        rules: Sequence[Rule],
        *,
        mode: PermissionMode = PermissionMode.DEFAULT,
        headless: bool = False,
        assume_yes: bool = False,
    ) -> None:
        self.rules = tuple(rules)
        self.mode = mode
        self.headless = headless
        self.assume_yes = assume_yes
        self._session_rules: list[Rule] = []

    def set_mode(self, mode: PermissionMode | str) -> None:
        self.mode = PermissionMode(mode)

    def allow_for_session(self, rule: Rule) -> None:
        self._session_rules.append(rule)

    @property
    def session_rules(self) -> tuple[Rule, ...]:
        return tuple(self._session_rules)

    def hidden(self, tool_ids: Iterable[str]) -> frozenset[str]:
        """Tools never shown to the model (configured unconditional denies only)."""
        return hidden_tools(self.rules, tool_ids)

    def evaluate(
        self,
        tool_id: str,
        arguments: Mapping[str, Any],
        *,
        read_only: bool,
        hook: str | None = None,
    ) -> Decision:
        """Decide one call. `hook` is what Claude Code hooks said about it (`allow`, `ask`;
        `HookOutcome.permission`): see `with_hook_permission`."""
        decision = evaluate(
            (*self.rules, *self._session_rules),
            tool_id,
            arguments,
            read_only=read_only,
            mode=self.mode,
        )
        decision = with_hook_permission(decision, hook)
        if decision.effect is not Effect.ASK or not self.headless:
            return decision
        if self.assume_yes:
            return Decision(Effect.ALLOW, f"--yes ({decision.reason})", decision.rule)
        return Decision(
            Effect.DENY,
            f"denied by policy: {tool_id} needs approval and this run cannot ask "
            f"(rerun with --yes or add an allow rule); {decision.reason}",
            decision.rule,
            DeniedBy.POLICY,
        )
