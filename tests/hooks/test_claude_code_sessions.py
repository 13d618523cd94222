"""Claude Code hooks from `.claude/settings.json` in real `rawtrio -p` runs against the fake
model server: the script is run as Claude Code would run it, and what it decides is what
the model is told.

Claude Code's own example, examples/hooks/bash_command_validator_example.py of
github.com/anthropics/claude-code, is not committed here: that repository's licence
(LICENSE.md: "All rights reserved", use subject to Anthropic's Commercial Terms) does not
allow redistributing it. `python -m tests.hooks.check_claude_validator PATH` runs an
unchanged copy through rawtrio; tests/hooks/scripts/claude_code_guard.py exercises the same
contract here (tests/fixtures/third_party/claude-code/README.md).
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from rawtrio.testing.fake_model import Scenario
from tests.headless.support import Finished, Isolation, fake_model_in_thread, run_rawtrio

GUARD = Path(__file__).parent / "scripts" / "claude_code_guard.py"
KEYS = {"ANTHROPIC_API_KEY": "test-key"}
RG = "Use 'rg' (ripgrep) instead of 'grep'"


def calling(command: str) -> dict[str, Any]:
    call = {"name": "bash", "arguments": {"command": command}}
    return {"rules": [{"match": "go", "replies": [{"tool_calls": [call]}, {"text": "done"}]}]}


def project(iso: Isolation, hook_command: str, matcher: str = "Bash") -> Path:
    """A repository whose `.claude/settings.json` runs `hook_command` before Bash calls."""
    root = iso.cwd
    (root / ".git").mkdir(parents=True, exist_ok=True)
    hooks = {
        "PreToolUse": [
            {"matcher": matcher, "hooks": [{"type": "command", "command": hook_command}]}
        ]
    }
    (root / ".claude").mkdir(exist_ok=True)
    (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    (root / "notes.txt").write_text("needle in here\n")
    return root


def run(
    iso: Isolation, command: str, *flags: str, env: dict[str, str] | None = None
) -> tuple[Finished, str]:
    """One headless turn whose model runs `command` with bash; returns the run and what
    the model was sent back (the second request)."""
    with fake_model_in_thread(Scenario.from_dict(calling(command))) as server:
        done = run_rawtrio(
            iso, "-p", "go", "--base-url", server.base_url, *flags, env={**KEYS, **(env or {})}
        )
        bodies = [json.dumps(r.body, ensure_ascii=False) for r in server.requests]
    assert done.returncode == 0, done
    assert len(bodies) == 2, done
    return done, bodies[1]


def in_project(iso: Isolation) -> str:
    """The guard copied into the project, called the way Claude Code projects call hooks."""
    target = iso.cwd / ".claude" / "hooks" / GUARD.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(GUARD, target)
    return f'{shlex.quote(sys.executable)} "$CLAUDE_PROJECT_DIR"/.claude/hooks/{GUARD.name}'


def test_a_trusted_projects_guard_blocks_grep_and_the_model_reads_why(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    project(iso, in_project(iso))
    _, sent_back = run(iso, "grep -r needle .", "--trust")
    assert RG in sent_back
    assert "denied by a PreToolUse hook" in sent_back
    assert "notes.txt" not in sent_back  # grep never ran


def test_an_untrusted_projects_hooks_do_not_run(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    log = tmp_path / "guard.log"
    project(iso, in_project(iso))
    done, sent_back = run(iso, "grep -r needle .", env={"GUARD_LOG": str(log)})
    assert "notes.txt:needle in here" in sent_back
    assert not log.exists()
    assert ".claude/settings.json defines hooks" in done.stderr


def test_the_guard_reads_claude_code_input(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    log = tmp_path / "guard.log"
    project(iso, in_project(iso))
    run(iso, "echo hi", "--trust", env={"GUARD_LOG": str(log)})
    (seen,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert seen["hook_event_name"] == "PreToolUse"
    assert seen["tool_name"] == "Bash"
    assert seen["tool_input"] == {"command": "echo hi", "description": ""}
    assert seen["cwd"] == str(iso.cwd)


def test_a_hooks_allow_runs_a_call_a_headless_run_could_not_ask_about(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    project(iso, in_project(iso))
    asking = {"RAWTRIO_PERMISSION_MODE": "default"}
    _, allowed = run(iso, "ls", "--trust", env=asking)
    assert "notes.txt" in allowed
    _, refused = run(iso, "echo hi", "--trust", env=asking)
    assert "denied by policy" in refused  # no hook allowed this one, and no one can ask


def test_a_deny_rule_wins_over_a_hooks_allow(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    project(iso, in_project(iso))
    config = tmp_path / "rawtrio.toml"
    config.write_text(
        '[agents.default]\npermissions = [{ match = "bash", effect = "deny", '
        'when = { path = "command", regex = "^ls" } }]\n'
    )
    _, sent_back = run(iso, "ls", "--trust", "--config", str(config))
    assert "denied by rule" in sent_back
    assert "notes.txt" not in sent_back
