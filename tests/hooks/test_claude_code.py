"""Hooks of the `claude-code` dialect: Claude Code's names, input shapes, matchers and
JSON output, with real hook processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio.compat.claude_code import (
    claude_tool_input,
    claude_tool_name,
    compile_matcher,
    matches,
    rawtrio_tool_id,
)
from rawtrio.hooks import HookDecision, HookEvent, HookSpec, payloads
from tests.hooks.conftest import LIVENESS_S, MakeRunner, py

GUARD = Path(__file__).parent / "scripts" / "claude_code_guard.py"
RG = "• Use 'rg' (ripgrep) instead of 'grep'"
ECHO_INPUT = "import sys; sys.stdout.write(sys.stdin.read())"


def claude_hook(event: HookEvent, code: str, matcher: str = "*") -> HookSpec:
    return HookSpec(event, py(code), matcher=matcher, dialect="claude-code")


def guard(matcher: str = "Bash|Read|Edit") -> HookSpec:
    return HookSpec(
        HookEvent.PRE_TOOL_USE, (sys.executable, str(GUARD)), matcher, dialect="claude-code"
    )


@pytest.mark.parametrize(
    ("tool_id", "name"),
    [
        ("bash", "Bash"),
        ("read_file", "Read"),
        ("write_file", "Write"),
        ("edit_file", "Edit"),
        ("glob", "Glob"),
        ("grep", "Grep"),
        ("list_dir", "LS"),
        ("todo_write", "TodoWrite"),
        ("mcp/github/create_issue", "mcp__github__create_issue"),
    ],
)
def test_tool_names_map_both_ways(tool_id: str, name: str) -> None:
    assert claude_tool_name(tool_id) == name
    assert rawtrio_tool_id(name) == tool_id


def test_claude_code_tools_rawtrio_lacks_have_no_id() -> None:
    assert [rawtrio_tool_id(n) for n in ("WebFetch", "Task", "NotebookEdit")] == [None] * 3


@pytest.mark.parametrize(
    ("tool_id", "given", "seen"),
    [
        (
            "bash",
            {"command": "make test", "timeout_s": 12.5},
            {"command": "make test", "description": "", "timeout": 12500},
        ),
        (
            "read_file",
            {"path": "src/a.py", "offset": 3, "limit": 10},
            {"file_path": "/w/src/a.py", "offset": 3, "limit": 10},
        ),
        (
            "write_file",
            {"path": "/abs/b.txt", "content": "hi"},
            {"file_path": "/abs/b.txt", "content": "hi"},
        ),
        (
            "edit_file",
            {"path": "c.py", "old_text": "a", "new_text": "b", "replace_all": True},
            {"file_path": "/w/c.py", "old_string": "a", "new_string": "b", "replace_all": True},
        ),
        (
            "edit_file",
            {"path": "c.py", "old_text": "a", "new_text": "b"},
            {"file_path": "/w/c.py", "old_string": "a", "new_string": "b", "replace_all": False},
        ),
        ("glob", {"pattern": "*.py", "path": "src"}, {"pattern": "*.py", "path": "/w/src"}),
        (
            "grep",
            {"pattern": "x", "ignore_case": True, "mode": "content", "context": 2},
            {"pattern": "x", "-i": True, "output_mode": "content", "-C": 2},
        ),
        (
            "todo_write",
            {"todos": [{"content": "t", "status": "pending"}]},
            {"todos": [{"content": "t", "status": "pending", "activeForm": "t"}]},
        ),
        ("mcp/gh/x", {"title": "t"}, {"title": "t"}),
    ],
)
def test_tool_input_takes_claude_code_shapes(
    tool_id: str, given: dict[str, Any], seen: dict[str, Any]
) -> None:
    assert claude_tool_input(tool_id, given, Path("/w")) == seen


@pytest.mark.parametrize(
    ("matcher", "name", "expected"),
    [
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),
        ("Edit|Write", "Write", True),
        ("Edit|Write", "Read", False),
        ("mcp__github__.*", "mcp__github__create_issue", True),
        ("mcp__github__.*", "mcp__gitlab__x", False),
        ("", "Anything", True),
        ("*", "Anything", True),
        ("Notebook.*", "NotebookEdit", True),
    ],
)
def test_matchers_follow_claude_code(matcher: str, name: str, expected: bool) -> None:
    assert matches(compile_matcher(matcher), name) is expected


def test_an_invalid_regex_matcher_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"matcher 'mcp__\(' is not a valid regular"):
        HookSpec(HookEvent.PRE_TOOL_USE, "true", matcher="mcp__(", dialect="claude-code")


def test_a_claude_code_matcher_is_compared_with_claude_code_names() -> None:
    hook = HookSpec(HookEvent.PRE_TOOL_USE, "true", matcher="Bash", dialect="claude-code")
    assert hook.matches("bash")
    assert not hook.matches("bash_output")
    assert not HookSpec(HookEvent.PRE_TOOL_USE, "true", matcher="Bash").matches("bash")


async def test_a_claude_code_hook_reads_claude_code_names_and_shapes(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    runner, receipts = make_runner(
        claude_hook(HookEvent.PRE_TOOL_USE, ECHO_INPUT, "Bash"),
        HookSpec(HookEvent.PRE_TOOL_USE, py(ECHO_INPUT), matcher="bash"),
    )
    payload = payloads.pre_tool_use("bash", {"command": "ls", "timeout_s": 5}, "call-1")
    with trio.fail_after(LIVENESS_S):
        await runner.run(HookEvent.PRE_TOOL_USE, payload)
    claude, own = (json.loads(r.stdout) for r in receipts)
    assert claude == {
        "tool_name": "Bash",
        "tool_input": {"command": "ls", "description": "", "timeout": 5000},
        "tool_use_id": "call-1",
        "session_id": "sess-hooks",
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
    }
    assert (own["tool_name"], own["tool_input"]) == ("bash", {"command": "ls", "timeout_s": 5})


@pytest.mark.parametrize(
    ("tool_id", "args", "denied", "permission", "reason"),
    [
        (
            "bash",
            {"command": "grep -r foo ."},
            True,
            None,
            "• Use 'rg' (ripgrep) instead of 'grep'",
        ),
        ("bash", {"command": "grep foo x | head"}, False, None, ""),
        ("bash", {"command": "rm -rf build"}, True, None, "no rm through this guard"),
        ("bash", {"command": "ls -la"}, False, "allow", ""),
        ("bash", {"command": "git push"}, False, "ask", ""),
        ("read_file", {"path": "config/.env"}, True, None, "no reading .env files"),
        ("read_file", {"path": "README.md"}, False, None, ""),
    ],
)
async def test_a_claude_code_guard_script_decides_through_rawtrio(
    make_runner: MakeRunner,
    tool_id: str,
    args: dict[str, Any],
    denied: bool,
    permission: str | None,
    reason: str,
) -> None:
    runner, receipts = make_runner(guard())
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(
            HookEvent.PRE_TOOL_USE, payloads.pre_tool_use(tool_id, args, "c")
        )
    assert len(receipts) == 1
    assert (outcome.denied or outcome.blocked, outcome.permission) == (denied, permission)
    assert outcome.reason == reason
    assert outcome.warnings == ()


async def test_continue_false_halts_the_turn_and_blocks_the_call(
    make_runner: MakeRunner,
) -> None:
    runner, _ = make_runner(guard("Edit"))
    args = {"path": "a.py", "old_text": "x", "new_text": "# TODO later"}
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(
            HookEvent.PRE_TOOL_USE, payloads.pre_tool_use("edit_file", args, "c")
        )
    assert (outcome.blocked, outcome.halted, outcome.halt_reason) == (True, True, "no new TODOs")


async def test_continue_false_on_stop_lets_the_turn_stop(make_runner: MakeRunner) -> None:
    code = "import json; print(json.dumps({'continue': False, 'stopReason': 'enough'}))"
    runner, _ = make_runner(claude_hook(HookEvent.STOP, code))
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.STOP, payloads.stop(stop_hook_active=False))
    assert (outcome.blocked, outcome.halted) == (False, True)
    own, _ = make_runner(HookSpec(HookEvent.STOP, py(code)))
    with trio.fail_after(LIVENESS_S):
        blocked = await own.run(HookEvent.STOP, payloads.stop(stop_hook_active=False))
    assert (blocked.blocked, blocked.halted) == (True, False)


async def test_suppress_output_keeps_stdout_out_of_the_receipt(make_runner: MakeRunner) -> None:
    code = (
        "import json; print(json.dumps({'suppressOutput': True, "
        "'hookSpecificOutput': {'additionalContext': 'secret-ish detail'}}))"
    )
    runner, receipts = make_runner(claude_hook(HookEvent.POST_TOOL_USE, code))
    payload = payloads.post_tool_use("bash", {"command": "ls"}, "c", status="ok", content="")
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.POST_TOOL_USE, payload)
    assert receipts[0].stdout == ""
    assert receipts[0].decision is HookDecision.CONTINUE
    assert outcome.context == ("secret-ish detail",)


async def test_legacy_approve_and_behavior_allow_permit_the_call(
    make_runner: MakeRunner,
) -> None:
    approve = "import json; print(json.dumps({'decision': 'approve'}))"
    behavior = (
        "import json; print(json.dumps({'hookSpecificOutput': "
        "{'decision': {'behavior': 'allow'}}}))"
    )
    runner, _ = make_runner(claude_hook(HookEvent.PRE_TOOL_USE, approve))
    other, _ = make_runner(claude_hook(HookEvent.PERMISSION_REQUEST, behavior))
    with trio.fail_after(LIVENESS_S):
        pre = await runner.run(HookEvent.PRE_TOOL_USE, payloads.pre_tool_use("bash", {}, "c"))
        asked = await other.run(
            HookEvent.PERMISSION_REQUEST, payloads.permission_request("bash", {}, "c")
        )
    assert (pre.permission, asked.permission) == ("allow", "allow")


async def test_an_own_hook_still_cannot_allow(make_runner: MakeRunner) -> None:
    code = "import json; print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow'}}))"
    runner, _ = make_runner(HookSpec(HookEvent.PRE_TOOL_USE, py(code)))
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.PRE_TOOL_USE, payloads.pre_tool_use("bash", {}, "c"))
    assert outcome.permission is None
    assert "has no effect" in outcome.warnings[0]


async def test_a_claude_code_post_hook_reads_claude_code_response_fields(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    runner, receipts = make_runner(claude_hook(HookEvent.POST_TOOL_USE, ECHO_INPUT, "Write"))
    payload = payloads.post_tool_use(
        "write_file", {"path": "a.txt", "content": "x"}, "c", status="ok", content="wrote a.txt"
    )
    with trio.fail_after(LIVENESS_S):
        await runner.run(HookEvent.POST_TOOL_USE, payload)
    seen = json.loads(receipts[0].stdout)
    assert seen["tool_name"] == "Write"
    assert seen["tool_input"] == {"file_path": str(tmp_path / "a.txt"), "content": "x"}
    assert seen["tool_response"] == {
        "status": "ok",
        "content": "wrote a.txt",
        "details": {},
        "success": True,
        "filePath": str(tmp_path / "a.txt"),
    }
