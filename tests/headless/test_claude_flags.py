"""Claude Code's tool names and patterns as rawtrio's permission rules
(`--allowedTools` / `--disallowedTools`, `rawtrio.cli.flags`), evaluated by rawtrio's own
rule engine: an allow pattern fails closed on shell operators, a deny always wins."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from rawtrio.cli.flags import add_session_flags, split_tool_list, tool_rule
from rawtrio.permissions.rules import Effect, evaluate, make_rule


def rules_of(*argv: str) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser()
    add_session_flags(parser)
    rules: list[dict[str, Any]] = parser.parse_args(list(argv)).tool_rules
    return rules


def decide(argv: tuple[str, ...], command: str) -> Effect:
    rules = [
        make_rule(r["match"], r["effect"], *(r["when"].values() if "when" in r else ()))
        for r in rules_of(*argv)
    ]
    return evaluate(rules, "bash", {"command": command}, read_only=False).effect


def test_lists_split_at_commas_and_spaces_outside_parentheses() -> None:
    assert split_tool_list("Bash(git log:*),Read  Edit") == ["Bash(git log:*)", "Read", "Edit"]
    assert split_tool_list("Bash(npm run test:*, x)") == ["Bash(npm run test:*, x)"]


def test_claude_code_names_map_to_rawtrio_tools() -> None:
    assert rules_of("--allowedTools", "Read,Edit", "MultiEdit", "--allowed-tools", "LS") == [
        {"match": "read_file", "effect": "allow"},
        {"match": "edit_file", "effect": "allow"},
        {"match": "edit_file", "effect": "allow"},
        {"match": "list_dir", "effect": "allow"},
    ]
    assert tool_rule("mcp__github__create_issue", "deny") == {
        "match": "mcp/github/create_issue",
        "effect": "deny",
    }
    assert tool_rule("mcp__github", "allow") == {"match": "mcp/github/*", "effect": "allow"}
    assert tool_rule("read_file", "allow") == {"match": "read_file", "effect": "allow"}


def test_a_claude_only_tool_is_skipped_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert rules_of("--allowedTools", "WebFetch", "Read") == [
        {"match": "read_file", "effect": "allow"}
    ]
    assert "WebFetch: rawtrio has no WebFetch tool; skipped" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "effect"),
    [
        ("git log", Effect.ALLOW),
        ("git log --oneline -3", Effect.ALLOW),
        ("git logx", Effect.ASK),  # a prefix of words, not of characters
        ("git log; rm -rf ~", Effect.ASK),  # fails closed: shell operators
        ("git log && rm -rf ~", Effect.ASK),
        ("git log | sh", Effect.ASK),
        ("git log $(rm -rf ~)", Effect.ASK),
        ("git log `rm -rf ~`", Effect.ASK),
        ("git log > ~/.bashrc", Effect.ASK),
        ("git log\nrm -rf ~", Effect.ASK),
        ("npm install", Effect.ALLOW),
        ("npm install left-pad", Effect.ASK),  # exact
    ],
)
def test_bash_patterns_allow_only_what_they_name(command: str, effect: Effect) -> None:
    argv = ("--allowedTools", "Bash(git log:*)", "Bash(npm install)")
    assert decide(argv, command) is effect


def test_a_deny_wins_over_an_allow_whatever_the_order() -> None:
    for argv in (
        ("--disallowedTools", "Bash(rm:*)", "--allowedTools", "Bash"),
        ("--allowedTools", "Bash", "--disallowedTools", "Bash(rm:*)"),
    ):
        assert decide(argv, "ls -la") is Effect.ALLOW
        assert decide(argv, "rm -rf build") is Effect.DENY
        assert decide(argv, "rm x\nls") is Effect.DENY  # a deny's `*` matches anything


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("Read(./secrets/**)", "only Bash(...) patterns can be given as a flag"),
        ("WebFetch(domain:example.com)", None),  # Claude-only: skipped, not an error
        ("Bash(ls", "is not a tool name or pattern"),
        ("Nope", "no such tool"),
        ("mcp__", "no server name after mcp__"),
    ],
)
def test_what_cannot_be_mapped_is_named(pattern: str, message: str | None) -> None:
    if message is None:
        assert tool_rule(pattern, "allow") is None
        return
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tool_rule(pattern, "allow")
