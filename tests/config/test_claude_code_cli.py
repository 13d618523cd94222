"""`rawtrio config check` and a headless run, as real programs: a hook `match` that names no
tool stops them (exit 2), and the check lists what came from Claude Code's files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.headless.support import Isolation, run_rawtrio

KEYS = {"ANTHROPIC_API_KEY": "test-key"}
GUARD_HOOK = '[[hooks]]\nevent = "PreToolUse"\nmatch = "Bash"\ncommand = "./guard.sh"\n'


def user_config(iso: Isolation, text: str) -> str:
    path = iso.root / "rawtrio.toml"
    path.write_text(text)
    return str(path)


def test_config_check_refuses_a_match_that_names_no_tool(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    config = user_config(iso, GUARD_HOOK)
    done = run_rawtrio(iso, "config", "check", "--config", config)
    assert done.returncode == 2, done
    assert f"{config}: hooks[0].match: 'Bash' names no tool; this hook never runs" in done.stderr
    assert "did you mean 'bash'?" in done.stderr


def test_a_headless_run_refuses_it_before_any_request(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    config = user_config(iso, GUARD_HOOK)
    done = run_rawtrio(
        iso, "-p", "hello", "--base-url", "http://127.0.0.1:9", "--config", config, env=KEYS
    )
    assert done.returncode == 2, done
    assert "did you mean 'bash'?" in done.stderr


def test_config_check_lists_what_came_from_claude_code_settings(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    config = user_config(iso, '[[hooks]]\nevent = "Stop"\ncommand = "./done.sh"\n')
    (iso.cwd / ".git").mkdir(parents=True)
    (iso.cwd / ".claude").mkdir()
    (iso.cwd / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./v.py"}]}
                    ]
                },
                "permissions": {"deny": ["Read(./secrets/**)", "WebFetch(domain:x.org)"]},
            }
        )
    )
    untrusted = run_rawtrio(iso, "config", "check", "--config", config)
    assert untrusted.returncode == 0, untrusted
    assert "(not trusted)" in untrusted.stdout
    assert "./v.py" not in untrusted.stdout
    done = run_rawtrio(iso, "config", "check", "--config", config, "--trust")
    assert done.returncode == 0, done
    out = done.stdout
    assert f"Stop *: ./done.sh  ({config}: hooks[0])" in out
    assert (
        "PreToolUse Bash: ./v.py (Claude Code dialect)  "
        "(.claude/settings.json: hooks.PreToolUse[0].hooks[0])"
    ) in out
    assert "  deny read_file when path ~ /" in out
    assert "(.claude/settings.json: permissions.deny[0] Read(./secrets/**))" in out
    assert f"Claude Code settings: project {iso.cwd / '.claude' / 'settings.json'}" in out
    assert "'WebFetch(domain:x.org)' names WebFetch, a tool rawtrio does not have" in done.stderr
