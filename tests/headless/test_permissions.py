"""Approval and configuration through the real program: rules, modes, --yes, the chat's
permission prompt, and `rawtrio config check|init`."""

from __future__ import annotations

import json
import subprocess

from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation, LiveRun, run_rawtrio

KEYS = {"ANTHROPIC_API_KEY": "test-key"}
#: The default permission mode, instead of the bypass the other headless tests use.
ASKING = {**KEYS, "RAWTRIO_PERMISSION_MODE": "default"}


def tool_run(fake: FakeModel, *extra: str) -> list[str]:
    return [
        "-p",
        "use a tool",
        "--base-url",
        fake.base_url,
        "--output-format",
        "events",
        *extra,
    ]


def finished_calls(stdout: str) -> list[dict[str, object]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e for e in events if e["type"] == "tool_call_finished"]


def test_headless_ask_is_denied_by_policy_unless_yes(iso: Isolation, fake_model: FakeModel) -> None:
    denied = run_rawtrio(iso, *tool_run(fake_model), env=ASKING)
    assert denied.returncode == 0, denied
    (call,) = finished_calls(denied.stdout)
    assert call["status"] == "denied"
    assert call["denied_by"] == "policy"
    allowed = run_rawtrio(iso, *tool_run(fake_model, "--yes"), env=ASKING)
    (call,) = finished_calls(allowed.stdout)
    assert call["status"] == "ok"
    assert "tool-output" in str(call["content"])


def test_a_configured_deny_rule_wins_over_yes(iso: Isolation, fake_model: FakeModel) -> None:
    config = iso.root / "rawtrio.toml"
    config.write_text(
        '[agents.default]\npermissions = [{ match = "bash", effect = "deny", '
        'when = { path = "command", regex = "^echo" } }]\n'
    )
    done = run_rawtrio(iso, *tool_run(fake_model, "--yes", "--config", str(config)), env=ASKING)
    (call,) = finished_calls(done.stdout)
    assert call["status"] == "denied"
    assert call["denied_by"] == "rule"


def test_the_chat_asks_and_takes_the_next_line_as_the_answer(
    iso: Isolation, fake_model: FakeModel
) -> None:
    chat = LiveRun.start(iso, "--base-url", fake_model.base_url, env=ASKING, stdin=subprocess.PIPE)
    assert chat.proc.stdin is not None
    chat.proc.stdin.write("use a tool\n")
    chat.proc.stdin.flush()
    chat.wait_for_text("[permission] bash")
    chat.proc.stdin.write("y\n")
    chat.proc.stdin.close()
    done = chat.finish()
    assert done.returncode == 0, done
    assert "[bash → ok]" in done.stdout
    assert "The tool said tool-output." in done.stdout


def test_config_check_names_the_bad_key_and_init_writes_a_valid_file(iso: Isolation) -> None:
    bad = iso.root / "bad.toml"
    bad.write_text("[agents.coder]\nmax_steps = -1\n")
    checked = run_rawtrio(iso, "config", "check", "--config", str(bad))
    assert checked.returncode == 2
    assert "agents.coder.max_steps: expected a positive integer, got -1" in checked.stderr
    starter = iso.root / "starter.toml"
    init = run_rawtrio(iso, "config", "init", "--config", str(starter))
    assert init.returncode == 0, init
    assert starter.exists()
    ok = run_rawtrio(iso, "config", "check", "--config", str(starter))
    assert ok.returncode == 0, ok
    assert "agent:" in ok.stdout


def test_text_output_says_on_stderr_which_call_was_denied_and_why(
    iso: Isolation, fake_model: FakeModel
) -> None:
    done = run_rawtrio(iso, "-p", "use a tool", "--base-url", fake_model.base_url, env=ASKING)
    assert done.returncode == 0, done
    assert "rawtrio: bash: denied by policy: bash needs approval" in done.stderr
    assert "denied" not in done.stdout


def test_text_output_prints_notices_on_stderr(iso: Isolation, fake_model: FakeModel) -> None:
    config = iso.root / "rawtrio.toml"
    config.write_text(
        'hooks = [{ event = "PostToolUse", match = "bash", '
        'command = ["sh", "-c", "echo careful >&2; exit 1"] }]\n'
    )
    args = ("-p", "use a tool", "--base-url", fake_model.base_url, "--config", str(config))
    done = run_rawtrio(iso, *args, env=KEYS)
    assert done.returncode == 0, done
    assert "rawtrio: warning: " in done.stderr
    assert "exit code 1: careful" in done.stderr
    assert "careful" not in done.stdout
