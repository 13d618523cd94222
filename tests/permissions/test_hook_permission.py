"""What a Claude Code hook's `permissionDecision` does to the rules' decision."""

from __future__ import annotations

import pytest

from rawtrio.contracts import DeniedBy
from rawtrio.permissions import Effect, PermissionMode, PermissionPolicy, make_rule


def decide(policy: PermissionPolicy, hook: str | None, tool: str = "bash") -> Effect:
    return policy.evaluate(tool, {"command": "ls"}, read_only=False, hook=hook).effect


def test_allow_skips_the_question_and_ask_asks_where_rules_allow() -> None:
    policy = PermissionPolicy([make_rule("write_file", "allow")])
    assert decide(policy, None) is Effect.ASK
    assert decide(policy, "allow") is Effect.ALLOW
    assert decide(policy, "ask", "write_file") is Effect.ASK
    assert decide(policy, None, "write_file") is Effect.ALLOW


@pytest.mark.parametrize("mode", [PermissionMode.DEFAULT, PermissionMode.BYPASS])
def test_no_hook_undoes_a_deny_rule(mode: PermissionMode) -> None:
    policy = PermissionPolicy([make_rule("bash", "deny")], mode=mode)
    decision = policy.evaluate("bash", {}, read_only=False, hook="allow")
    assert (decision.effect, decision.denied_by) == (Effect.DENY, DeniedBy.RULE)


def test_plan_mode_wins_over_a_hook_allow() -> None:
    policy = PermissionPolicy([], mode=PermissionMode.PLAN)
    decision = policy.evaluate("bash", {}, read_only=False, hook="allow")
    assert (decision.effect, decision.denied_by) == (Effect.DENY, DeniedBy.MODE)


def test_headless_runs_what_a_hook_allowed_and_refuses_what_it_asks_about() -> None:
    policy = PermissionPolicy([make_rule("write_file", "allow")], headless=True)
    assert decide(policy, "allow") is Effect.ALLOW
    refused = policy.evaluate("write_file", {}, read_only=False, hook="ask")
    assert (refused.effect, refused.denied_by) == (Effect.DENY, DeniedBy.POLICY)
    assert "a PreToolUse hook asks" in refused.reason
