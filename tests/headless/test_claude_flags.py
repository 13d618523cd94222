"""Claude Code's tool names and patterns as rawtrio's permission rules
(`--allowedTools` / `--disallowedTools`, `rawtrio.cli.flags`), evaluated by rawtrio's own
rule engine: an allow pattern fails closed on shell operators, a deny always wins."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from rawtrio.cli.flags import add_session_flags, session_tool_rules, split_tool_list, tool_rules
from rawtrio.permissions.rules import Effect, evaluate, make_rule


def rules_of(*argv: str, cwd: Path | None = None) -> list[dict[str, Any]]:
    """The rules of the flags for a session working in `cwd` (default: here)."""
    parser = argparse.ArgumentParser()
    add_session_flags(parser)
    entries = parser.parse_args(list(argv)).tool_rules
    return session_tool_rules(entries, cwd=cwd or Path.cwd(), home=Path.home())


def decide(argv: tuple[str, ...], command: str, tool: str = "bash", **args: Any) -> Effect:
    rules = [
        make_rule(r["match"], r["effect"], *(r["when"].values() if "when" in r else ()))
        for r in rules_of(*argv)
    ]
    given = args if tool != "bash" else {"command": command}
    return evaluate(rules, tool, given, read_only=False).effect


def test_lists_split_at_commas_and_spaces_outside_parentheses() -> None:
    assert split_tool_list("Bash(git log:*),Read  Edit") == ["Bash(git log:*)", "Read", "Edit"]
    assert split_tool_list("Bash(npm run test:*, x)") == ["Bash(npm run test:*, x)"]


def test_claude_code_names_map_to_rawtrio_tools() -> None:
    """As in `.claude/settings.json`: `Read` covers the tools that read files, `Edit` the
    ones that change them."""
    assert rules_of("--allowedTools", "Read,Edit", "MultiEdit", "--allowed-tools", "LS") == [
        {"match": tool, "effect": "allow"}
        for tool in (
            *("read_file", "list_dir", "glob", "grep"),
            *("edit_file", "write_file", "edit_file", "list_dir"),
        )
    ]
    assert tool_rules("Skill", "allow") == [{"match": "load_skill", "effect": "allow"}]
    assert tool_rules("KillBash", "deny") == [{"match": "bash_stop", "effect": "deny"}]
    assert tool_rules("mcp__github__create_issue", "deny") == [
        {"match": "mcp/github/create_issue", "effect": "deny"}
    ]
    assert tool_rules("mcp__github", "allow") == [{"match": "mcp/github/*", "effect": "allow"}]
    assert tool_rules("mcp__github__*", "allow") == [{"match": "mcp/github/*", "effect": "allow"}]
    assert tool_rules("read_file", "allow") == [{"match": "read_file", "effect": "allow"}]
    assert tool_rules("mcp/*", "deny") == [{"match": "mcp/*", "effect": "deny"}]


def test_a_claude_only_tool_is_skipped_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert rules_of("--allowedTools", "WebFetch", "TodoWrite") == [
        {"match": "todo_write", "effect": "allow"}
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
    "command",
    [
        "ls && rm -rf x",
        "ls; rm -rf x",
        "true || rm -rf x",
        "ls | rm -rf x",
        "echo $(rm -rf x)",
        "echo `rm -rf x`",
        "ls\nrm -rf x",
        "  rm -rf x",
        "(rm -rf x)",
    ],
)
def test_a_disallowed_command_is_denied_wherever_a_command_can_start(command: str) -> None:
    """`--disallowedTools 'Bash(rm:*)'` denies `rm` after any chaining, as the same deny in
    `.claude/settings.json` does (not only a command that starts with it)."""
    argv = ("--allowedTools", "Bash", "--disallowedTools", "Bash(rm:*)")
    assert decide(argv, command) is Effect.DENY
    assert decide(argv, "ls -l farm") is Effect.ALLOW


@pytest.mark.parametrize(
    ("path", "effect"),
    [
        ("secrets/key", Effect.DENY),
        ("./secrets/key", Effect.DENY),
        ("src/../secrets/key", Effect.DENY),
        ("secrets", Effect.DENY),
        ("src/a.py", Effect.ALLOW),
    ],
)
def test_path_patterns_are_taken_against_the_working_directory(
    path: str, effect: Effect, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Read(./secrets/**)` is accepted as in `.claude/settings.json`, from the directory
    rawtrio runs in; relative and absolute paths are both caught."""
    monkeypatch.chdir(tmp_path)
    argv = ("--allowedTools", "Read", "--disallowedTools", "Read(./secrets/**)")
    assert decide(argv, "", "read_file", path=path) is effect
    assert decide(argv, "", "read_file", path=str(tmp_path / path)) is effect
    assert decide(argv, "", "grep", pattern="x", path=path) is effect


def test_an_allowed_path_pattern_allows_no_more_than_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ("--allowedTools", "Edit(/src/**)")
    assert decide(argv, "", "write_file", path="src/a.py") is Effect.ALLOW
    assert decide(argv, "", "edit_file", path=str(tmp_path / "src" / "a.py")) is Effect.ALLOW
    assert decide(argv, "", "write_file", path="src/../setup.py") is Effect.ASK
    assert decide(argv, "", "write_file", path="lib/a.py") is Effect.ASK


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("WebFetch(domain:example.com)", None),  # Claude-only: skipped, not an error
        ("Bash(ls", "is not a tool name or pattern"),
        ("Nope", "no such tool"),
        ("Nope(x)", "no such tool"),
        ("mcp__", "has no server name after mcp__"),
        ("mcp__github(x)", "has a specifier; MCP rules take none"),
        ("TodoWrite(x)", "has a specifier, which rawtrio cannot apply to todo_write"),
    ],
)
def test_what_cannot_be_mapped_is_named(pattern: str, message: str | None) -> None:
    if message is None:
        assert tool_rules(pattern, "allow") == []
        return
    with pytest.raises(ValueError, match=re.escape(f"{pattern!r}")) as raised:
        tool_rules(pattern, "allow")
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("pattern", "path", "effect"),
    [
        # `dir/**` is anchored at the working directory (gitignore: a `/` inside).
        ("Edit(src/**)", "src/a.py", Effect.ALLOW),
        ("Edit(src/**)", "{cwd}/src/a.py", Effect.ALLOW),
        ("Edit(src/**)", "lib/src/a.py", Effect.ASK),
        ("Edit(src/**)", "/src/a.py", Effect.ASK),
        ("Edit(src/**)", "/elsewhere/src/a.py", Effect.ASK),
        # No `/`: any depth, but below the working directory only.
        ("Edit(*.py)", "deep/down/a.py", Effect.ALLOW),
        ("Edit(*.py)", "{cwd}/deep/a.py", Effect.ALLOW),
        ("Edit(*.py)", "/etc/a.py", Effect.ASK),
        ("Edit(*.py)", "~/a.py", Effect.ASK),
        ("Edit(**/*.py)", "deep/a.py", Effect.ALLOW),
        ("Edit(**/*.py)", "/etc/a.py", Effect.ASK),
        ("Edit(**/*.py)", "~/a.py", Effect.ASK),
    ],
)
def test_an_allowed_path_pattern_stays_below_the_working_directory(
    pattern: str, path: str, effect: Effect, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    given = path.format(cwd=tmp_path)
    assert decide(("--allowedTools", pattern), "", "write_file", path=given) is effect


def decide_in(cwd: Path, argv: tuple[str, ...], tool: str, **args: Any) -> Effect:
    """As a session working in `cwd` maps the flags it was given (`prepare_session`)."""
    rules = [
        make_rule(r["match"], r["effect"], *(r["when"].values() if "when" in r else ()))
        for r in rules_of(*argv, cwd=cwd)
    ]
    return evaluate(rules, tool, args, read_only=False).effect


def test_the_flags_keep_the_patterns_as_given() -> None:
    """Parsing checks each name and pattern but maps none: each session maps them from
    its own working directory."""
    parser = argparse.ArgumentParser()
    add_session_flags(parser)
    argv = ["--disallowedTools", "Edit(src/key)", "--allowedTools", "Edit(src/**),Bash"]
    assert parser.parse_args(argv).tool_rules == [
        {"pattern": "Edit(src/key)", "effect": "deny"},
        {"pattern": "Edit(src/**)", "effect": "allow"},
        {"pattern": "Bash", "effect": "allow"},
    ]


@pytest.mark.parametrize("pattern", ["Edit(src/**)", "Edit(./src/**)", "Edit(/src/**)"])
def test_path_patterns_are_taken_from_the_sessions_directory_not_from_where_rawtrio_runs(
    pattern: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, project = tmp_path / "here", tmp_path / "project"
    here.mkdir()
    project.mkdir()
    monkeypatch.chdir(here)
    argv = ("--allowedTools", pattern, "--disallowedTools", "Edit(src/secret)")
    assert decide_in(project, argv, "write_file", path=str(project / "src" / "a")) is Effect.ALLOW
    assert decide_in(project, argv, "write_file", path="src/a") is Effect.ALLOW
    assert decide_in(project, argv, "write_file", path=str(here / "src" / "a")) is Effect.ASK
    assert decide_in(project, argv, "edit_file", path=str(project / "src" / "secret")) is (
        Effect.DENY
    )


def test_rule_objects_pass_as_they_are_and_bad_entries_are_named(tmp_path: Path) -> None:
    """A host's client may send rawtrio rule objects (`{"match", "effect", "when"?}`) or
    the patterns as given (`{"pattern", "effect"}`); the denials go last."""
    rule = {"match": "bash", "effect": "deny"}
    entries = [rule, {"pattern": "Read", "effect": "allow"}]
    assert session_tool_rules(entries, cwd=tmp_path, home=tmp_path)[-1] == rule
    for bad, message in [
        ({"pattern": "Nope", "effect": "allow"}, "entry 1: 'Nope': no such tool"),
        ({"pattern": "Read", "effect": "ask"}, "entry 1: 'ask': a tool list allows or denies"),
        ({"pattern": 3, "effect": "allow"}, "entry 1: pattern must be a string"),
        ({"pattern": "Read", "effect": "allow", "x": 1}, "entry 1: unknown key 'x'"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            session_tool_rules([bad], cwd=tmp_path, home=tmp_path)
