"""`rawtrio -p` as a drop-in for `claude -p` (docs/compat.md, "Headless (`-p`)"): Claude
Code's `stream-json` and `json` shapes, its flags with its meaning, `--input-format
stream-json`, and scripts written for `claude -p` run unchanged against the real program
and the fake model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rawtrio.contracts import ExitCode
from rawtrio.runtime.prompt import BASE_PROMPT
from rawtrio.testing.fake_model import Scenario
from tests.headless.conftest import SCENARIO, FakeModel
from tests.headless.support import LIVENESS_S, Isolation, fake_model_in_thread, run_rawtrio

KEYS = {"ANTHROPIC_API_KEY": "test-key"}
#: Claude Code's usage keys (the Anthropic API's).
CLAUDE_USAGE = {
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
}


def claude_flags(fake: FakeModel) -> list[str]:
    return ["--base-url", fake.base_url, "--model", "test-model"]


def test_stream_json_prints_claude_codes_messages(iso: Isolation, fake_model: FakeModel) -> None:
    done = run_rawtrio(
        iso,
        "-p",
        "use a tool",
        "--output-format",
        "stream-json",
        "--verbose",
        *claude_flags(fake_model),
        env=KEYS,
    )
    assert done.returncode == 0, done.stderr
    lines = done.json_lines()
    assert [line["type"] for line in lines] == [
        "system",
        "assistant",
        "user",
        "assistant",
        "result",
    ]
    init, call, tool_result, answer, result = lines
    assert init["subtype"] == "init"
    assert init["cwd"] == str(iso.cwd.resolve())
    assert init["model"] == "test-model"
    assert {"bash", "read_file"} <= set(init["tools"])
    assert init["permissionMode"] == "bypassPermissions"  # RAWTRIO_PERMISSION_MODE=bypass
    session_id = init["session_id"]
    assert all(line["session_id"] == session_id for line in lines)
    assert len({line["uuid"] for line in lines}) == len(lines)

    message = call["message"]
    assert (message["type"], message["role"], message["model"]) == (
        "message",
        "assistant",
        "test-model",
    )
    [tool_use] = message["content"]
    assert tool_use["type"] == "tool_use"
    assert tool_use["name"] == "bash"
    assert tool_use["input"] == {"command": "echo tool-output"}
    assert call["parent_tool_use_id"] is None

    assert tool_result["message"]["role"] == "user"
    [block] = tool_result["message"]["content"]
    assert block["type"] == "tool_result"
    assert block["tool_use_id"] == tool_use["id"]
    assert "tool-output" in block["content"]
    assert block["is_error"] is False
    assert tool_result["rawtrio"]["status"] == "ok"

    assert answer["message"]["content"] == [{"type": "text", "text": "The tool said tool-output."}]

    assert result["subtype"] == "success"
    assert result["is_error"] is False
    assert result["result"] == "The tool said tool-output."
    assert result["num_turns"] == 2
    assert isinstance(result["duration_ms"], int)
    assert 0 <= result["duration_api_ms"] <= result["duration_ms"]
    assert result["total_cost_usd"] is None  # no prices configured
    assert set(result["usage"]) >= CLAUDE_USAGE
    assert result["usage"]["output_tokens"] > 0
    assert result["permission_denials"] == []


def test_json_is_claude_codes_result_object(iso: Isolation, fake_model: FakeModel) -> None:
    done = run_rawtrio(
        iso,
        "-p",
        "--output-format",
        "json",
        *claude_flags(fake_model),
        "say hello",  # Claude Code's order: -p, flags, then the query
        env=KEYS,
    )
    assert done.returncode == 0, done.stderr
    [result] = done.json_lines()
    assert result["type"] == "result"
    assert result["subtype"] == "success"
    assert result["is_error"] is False
    assert result["result"] == "Hello from the fake model."
    assert result["num_turns"] == 1
    assert result["session_id"]
    for key in ("duration_ms", "duration_api_ms", "total_cost_usd", "usage", "uuid"):
        assert key in result


def test_max_turns_ends_with_error_max_turns(iso: Isolation, fake_model: FakeModel) -> None:
    done = run_rawtrio(
        iso,
        "-p",
        "keep calling tools",
        "--max-turns",
        "2",
        "--output-format",
        "json",
        *claude_flags(fake_model),
        env=KEYS,
    )
    assert done.returncode == ExitCode.MAX_STEPS, done.stderr
    [result] = done.json_lines()
    assert result["subtype"] == "error_max_turns"
    assert result["is_error"] is True
    assert result["num_turns"] == 2
    assert result["errors"]


def test_allowed_tools_lets_a_matching_command_run_and_no_other(
    iso: Isolation, fake_model: FakeModel
) -> None:
    """In `default` mode a headless run denies what would ask; `--allowedTools
    "Bash(echo:*)"` allows `echo …` (and nothing else: a permission denial is listed)."""
    env = {**KEYS, "RAWTRIO_PERMISSION_MODE": "default"}
    base = ["-p", "use a tool", "--output-format", "json", *claude_flags(fake_model)]
    allowed = run_rawtrio(iso, *base, "--allowedTools", "Bash(echo:*),Read", env=env)
    assert allowed.returncode == 0, allowed.stderr
    [result] = allowed.json_lines()
    assert result["permission_denials"] == []
    not_allowed = run_rawtrio(iso, *base, "--allowed-tools", "Bash(git log:*)", "Read", env=env)
    [result] = not_allowed.json_lines()
    [denial] = result["permission_denials"]
    assert denial["tool_name"] == "bash"
    assert denial["tool_input"] == {"command": "echo tool-output"}


def test_disallowed_tools_removes_the_tool_from_the_list(
    iso: Isolation, fake_model: FakeModel
) -> None:
    done = run_rawtrio(
        iso,
        "-p",
        "use a tool",
        "--output-format",
        "stream-json",
        "--disallowedTools",
        "Bash",
        "--permission-mode",
        "bypassPermissions",  # no mode overrides a deny
        *claude_flags(fake_model),
        env=KEYS,
    )
    lines = done.json_lines()
    init = lines[0]
    assert "bash" not in init["tools"]
    assert "read_file" in init["tools"]
    [tool_result] = [line for line in lines if line["type"] == "user"]
    assert tool_result["message"]["content"][0]["is_error"] is True


def test_system_prompt_flags_reach_the_model(iso: Isolation) -> None:
    with fake_model_in_thread(Scenario.from_dict(SCENARIO)) as server:
        replaced = run_rawtrio(
            iso,
            "-p",
            "say hello",
            "--system-prompt",
            "You are a pirate.",
            "--append-system-prompt",
            "Always end with ARR.",
            "--base-url",
            server.base_url,
            env=KEYS,
        )
        assert replaced.returncode == 0, replaced.stderr
        plain = run_rawtrio(
            iso,
            "-p",
            "say hello",
            "--append-system-prompt",
            "ARR!",
            "--base-url",
            server.base_url,
            env=KEYS,
        )
        assert plain.returncode == 0, plain.stderr
        systems = [system_text(r.body) for r in server.requests]
    first, second = systems
    base = BASE_PROMPT.strip().splitlines()[0]
    assert first.startswith("You are a pirate.\n")
    assert base not in first  # replaced
    assert "\n\nAlways end with ARR.\n" in first
    assert second.startswith(base)  # kept
    assert "\n\nARR!\n" in second


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "".join(block.get("text", "") for block in system)
    return str(system or "")


def user_line(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"


def test_input_stream_json_runs_a_turn_per_message_in_one_session(
    iso: Isolation, fake_model: FakeModel
) -> None:
    stdin = (
        user_line("say hello")
        + json.dumps(
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "text", "text": "use a tool"}]},
            }
        )
        + "\n"
    )
    done = run_rawtrio(
        iso,
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        *claude_flags(fake_model),
        env=KEYS,
        stdin=stdin,
    )
    assert done.returncode == 0, done.stderr
    lines = done.json_lines()
    assert [line["type"] for line in lines].count("system") == 1
    results = [line for line in lines if line["type"] == "result"]
    assert [r["result"] for r in results] == [
        "Hello from the fake model.",
        "The tool said tool-output.",
    ]
    assert len({line["session_id"] for line in lines}) == 1
    assert lines[-1]["type"] == "result"


def test_input_stream_json_refuses_a_line_that_is_not_a_user_message(
    iso: Isolation, fake_model: FakeModel
) -> None:
    stdin = user_line("say hello") + '{"type": "control_request"}\n' + user_line("use a tool")
    done = run_rawtrio(
        iso,
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "json",
        *claude_flags(fake_model),
        env=KEYS,
        stdin=stdin,
    )
    assert done.returncode == ExitCode.USAGE
    assert "--input-format stream-json: line 2: expected a" in done.stderr
    assert "'control_request'" in done.stderr
    # The turn before it ran and printed its result; none after it started.
    assert [r["result"] for r in done.json_lines()] == ["Hello from the fake model."]


#: A script as Claude Code's headless docs write them (`rawtrio` where they have `claude`):
#: stream-json piped to a filter that picks the result line (what `jq
#: 'select(.type=="result")'` does), then a resume by the session id with `--output-format
#: json`.
CLAUDE_SCRIPT = r"""
set -eu
pick_result='import json, sys
for line in sys.stdin:
    obj = json.loads(line)
    if obj["type"] == "result":
        print(json.dumps(obj))'
first=$(rawtrio -p "use a tool" --output-format stream-json --verbose --max-turns 5 \
    --allowedTools "Bash(echo:*)" --permission-mode acceptEdits \
    --append-system-prompt "Be brief." $MODEL_FLAGS | python3 -c "$pick_result")
field='import json, sys; print(json.load(sys.stdin)[sys.argv[1]])'
sid=$(printf '%s' "$first" | python3 -c "$field" session_id)
test "$(printf '%s' "$first" | python3 -c "$field" subtype)" = success
test "$(printf '%s' "$first" | python3 -c "$field" is_error)" = False
second=$(rawtrio -p "say hello" -r "$sid" --output-format json $MODEL_FLAGS)
echo "$sid"
printf '%s' "$second" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["session_id"], r["num_turns"], r["result"])'
"""


def test_a_script_written_for_claude_runs_unchanged(iso: Isolation, fake_model: FakeModel) -> None:
    script = iso.root / "script.sh"
    script.write_text(CLAUDE_SCRIPT)
    env = iso.env(KEYS)
    env["RAWTRIO_PERMISSION_MODE"] = "default"  # the script's flags decide
    env["MODEL_FLAGS"] = " ".join(claude_flags(fake_model))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["sh", str(script)],
        cwd=iso.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIVENESS_S * 2,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first_id, second = done.stdout.strip().splitlines()
    session_id, num_turns, text = second.split(" ", 2)
    assert session_id == first_id  # -r resumed the session the first run printed
    assert num_turns == "1"
    assert text == "Hello from the fake model."
