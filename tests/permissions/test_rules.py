"""Rule evaluation: order, conditions, modes, hiding, headless policy, summaries."""

from __future__ import annotations

from typing import Any

import pytest

from rawtrio.config.schema import PermissionRuleConfig
from rawtrio.contracts import DeniedBy
from rawtrio.permissions import (
    Effect,
    PermissionMode,
    PermissionPolicy,
    Rule,
    allow_rule_for,
    evaluate,
    hidden_tools,
    make_rule,
    rules_from_config,
    summarize_call,
)

BASH_ASK = make_rule("bash", "ask")
BASH_ALLOW_LS = make_rule("bash", "allow", "command", r"^ls\b")
BASH_DENY_RM = make_rule("bash", "deny", "command", r"\brm\b")


def decide(rules: list[Rule], tool: str, args: dict[str, Any], **kw: Any) -> Effect:
    return evaluate(rules, tool, args, read_only=kw.pop("read_only", False), **kw).effect


def test_last_matching_rule_wins() -> None:
    rules = [make_rule("*", "deny"), make_rule("bash", "allow")]
    assert decide(rules, "bash", {}) is Effect.ALLOW
    assert decide(list(reversed(rules)), "bash", {}) is Effect.DENY


def test_when_narrows_a_rule_to_matching_arguments() -> None:
    rules = [BASH_ASK, BASH_ALLOW_LS, BASH_DENY_RM]
    assert decide(rules, "bash", {"command": "ls -la"}) is Effect.ALLOW
    assert decide(rules, "bash", {"command": "git push"}) is Effect.ASK
    assert decide(rules, "bash", {"command": "ls; rm x"}) is Effect.DENY


def test_when_path_with_wildcard_matches_any_element() -> None:
    rule = make_rule("edit_file", "deny", "edits[*].path", r"^\.env")
    args = {"edits": [{"path": "src/a.py"}, {"path": ".env.local"}]}
    assert decide([rule], "edit_file", args) is Effect.DENY
    assert decide([rule], "edit_file", {"edits": [{"path": "src/a.py"}]}) is Effect.ASK


def test_when_on_a_missing_argument_does_not_match() -> None:
    assert decide([make_rule("bash", "deny", "cmd", ".")], "bash", {"command": "x"}) is Effect.ASK


def test_glob_matches_namespaced_tool_ids() -> None:
    rules = [make_rule("mcp/github/*", "allow")]
    assert decide(rules, "mcp/github/create_issue", {}) is Effect.ALLOW
    assert decide(rules, "mcp/slack/post", {}) is Effect.ASK


def test_without_rules_read_only_tools_run_and_others_ask() -> None:
    assert decide([], "read_file", {}, read_only=True) is Effect.ALLOW
    assert decide([], "write_file", {}) is Effect.ASK


def test_bypass_never_overrides_a_deny_rule() -> None:
    rules = [BASH_ASK, BASH_DENY_RM]
    assert decide(rules, "bash", {"command": "make"}, mode=PermissionMode.BYPASS) is Effect.ALLOW
    d = evaluate(rules, "bash", {"command": "rm -r x"}, read_only=False, mode=PermissionMode.BYPASS)
    assert (d.effect, d.denied_by, d.rule) == (Effect.DENY, DeniedBy.RULE, BASH_DENY_RM)


def test_plan_mode_denies_tools_that_are_not_read_only() -> None:
    d = evaluate([make_rule("*", "allow")], "bash", {}, read_only=False, mode=PermissionMode.PLAN)
    assert (d.effect, d.denied_by) == (Effect.DENY, DeniedBy.MODE)
    assert decide([], "grep", {}, read_only=True, mode=PermissionMode.PLAN) is Effect.ALLOW


def test_accept_edits_allows_file_edits_but_still_asks_for_bash() -> None:
    mode = PermissionMode.ACCEPT_EDITS
    assert decide([], "edit_file", {}, mode=mode) is Effect.ALLOW
    assert decide([], "bash", {}, mode=mode) is Effect.ASK


def test_unconditional_deny_hides_the_tool() -> None:
    rules = [make_rule("mcp/*", "deny"), make_rule("bash", "deny", "command", "rm")]
    assert hidden_tools(rules, ["bash", "mcp/x/y", "read_file"]) == {"mcp/x/y"}


def test_a_later_conditional_allow_keeps_a_denied_tool_visible() -> None:
    rules = [make_rule("bash", "deny"), BASH_ALLOW_LS]
    assert hidden_tools(rules, ["bash"]) == frozenset()
    assert hidden_tools([BASH_ALLOW_LS, make_rule("bash", "deny")], ["bash"]) == {"bash"}


def test_modes_never_change_the_tool_list() -> None:
    policy = PermissionPolicy([make_rule("bash", "deny")])
    before = policy.hidden(["bash", "write_file"])
    policy.set_mode("plan")
    assert policy.hidden(["bash", "write_file"]) == before == {"bash"}


def test_headless_ask_becomes_a_policy_denial_unless_yes() -> None:
    policy = PermissionPolicy([], headless=True)
    d = policy.evaluate("bash", {"command": "make"}, read_only=False)
    assert (d.effect, d.denied_by) == (Effect.DENY, DeniedBy.POLICY)
    assert "denied by policy" in d.reason
    yes = PermissionPolicy([], headless=True, assume_yes=True)
    assert yes.evaluate("bash", {}, read_only=False).effect is Effect.ALLOW
    allowed = PermissionPolicy([make_rule("bash", "allow")], headless=True)
    assert allowed.evaluate("bash", {}, read_only=False).effect is Effect.ALLOW


def test_allow_always_for_the_session_matches_only_that_argument() -> None:
    policy = PermissionPolicy([BASH_ASK])
    policy.allow_for_session(allow_rule_for("bash", {"command": "make test"}, "command"))
    assert policy.evaluate("bash", {"command": "make test"}, read_only=False).effect is Effect.ALLOW
    assert policy.evaluate("bash", {"command": "make test; rm -rf /"}, read_only=False).effect is (
        Effect.ASK
    )


def test_rules_from_config_keep_order_and_origin() -> None:
    configs = [
        PermissionRuleConfig.model_validate({"match": "bash", "effect": "ask"}),
        PermissionRuleConfig.model_validate(
            {"match": "bash", "effect": "allow", "when": {"path": "command", "regex": "^ls"}}
        ),
    ]
    rules = rules_from_config(configs, ["f: a[0]", "f: a[1]"])
    assert [r.effect for r in rules] == [Effect.ASK, Effect.ALLOW]
    d = evaluate(rules, "bash", {"command": "ls"}, read_only=False)
    assert "f: a[1]" in d.reason


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("bash", {"command": "git push"}, "Run `git push`"),
        ("edit_file", {"path": "a.py", "edits": [{}, {}]}, "Edit a.py (2 edits)"),
        ("write_file", {"path": "b.txt", "content": "hey"}, "Write b.txt (3 characters)"),
        ("mcp/gh/issue", {"title": "x"}, 'mcp/gh/issue(title="x")'),
    ],
)
def test_summary_says_what_will_happen(tool: str, args: dict[str, Any], expected: str) -> None:
    assert summarize_call(tool, args) == expected


def test_summary_is_redacted_and_bounded() -> None:
    text = summarize_call(
        "bash",
        {"command": "curl -H sk-1234 " + "x" * 500},
        redact=lambda s: s.replace("sk-1234", "[r]"),
    )
    assert "sk-1234" not in text
    assert len(text) <= 200
