"""The exit-code and stdout rules, event by event (no processes involved)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rawtrio.hooks import HookDecision, HookEvent
from rawtrio.hooks.decision import CONTEXT_CAP, interpret_exit, interpret_stdout
from rawtrio.hooks.spec import BLOCKING_EVENTS, PLAIN_CONTEXT_EVENTS

ALL_EVENTS = list(HookEvent)
NON_BLOCKING = [e for e in HookEvent if e not in BLOCKING_EVENTS]


def out(data: Any) -> str:
    return json.dumps(data)


@pytest.mark.parametrize("event", ALL_EVENTS)
def test_exit_0_with_no_output_continues(event: HookEvent) -> None:
    assert interpret_exit(event, 0, "", "noise").decision is HookDecision.CONTINUE


@pytest.mark.parametrize("event", sorted(BLOCKING_EVENTS - {HookEvent.PERMISSION_REQUEST}))
def test_exit_2_blocks_with_stderr_as_the_reason(event: HookEvent) -> None:
    v = interpret_exit(event, 2, '{"ignored": true}', "  no rm -rf here\n")
    assert v.decision is HookDecision.BLOCK
    assert v.reason == "no rm -rf here"


def test_exit_2_on_a_permission_request_denies() -> None:
    v = interpret_exit(HookEvent.PERMISSION_REQUEST, 2, "", "not on main")
    assert (v.decision, v.reason) == (HookDecision.DENY, "not on main")


def test_exit_2_without_stderr_still_gives_a_reason() -> None:
    assert "exit code 2" in interpret_exit(HookEvent.PRE_TOOL_USE, 2, "", "").reason


@pytest.mark.parametrize("event", NON_BLOCKING)
def test_exit_2_on_an_event_that_cannot_block_warns(event: HookEvent) -> None:
    v = interpret_exit(event, 2, "", "why")
    assert v.decision is HookDecision.WARN
    assert "cannot be blocked: why" in v.warnings[0]


@pytest.mark.parametrize("event", ALL_EVENTS)
@pytest.mark.parametrize("code", [1, 3, 127, 255])
def test_other_exit_codes_warn_with_stderr(event: HookEvent, code: int) -> None:
    v = interpret_exit(event, code, '{"decision": "block"}', "boom")
    assert v.decision is HookDecision.WARN
    assert v.warnings == (f"exit code {code}: boom",)


@pytest.mark.parametrize("event", ALL_EVENTS)
def test_plain_stdout_is_context_only_where_claude_code_does_so(event: HookEvent) -> None:
    v = interpret_stdout(event, "branch: main\n")
    assert v.decision is HookDecision.CONTINUE
    assert v.context == ("branch: main" if event in PLAIN_CONTEXT_EVENTS else None)


@pytest.mark.parametrize("event", ALL_EVENTS)
def test_garbage_that_looks_like_json_is_a_warning(event: HookEvent) -> None:
    v = interpret_stdout(event, "{not json")
    assert v.decision is HookDecision.WARN
    assert "not valid JSON" in v.warnings[0]


def test_binary_garbage_is_treated_as_plain_text() -> None:
    v = interpret_stdout(HookEvent.PRE_TOOL_USE, "\ufffd\x00\x01garbage")
    assert v.decision is HookDecision.CONTINUE


def test_a_json_escape_of_a_lone_surrogate_becomes_a_replacement_character() -> None:
    stdout = (
        '{"hookSpecificOutput": {"permissionDecision": "deny", '
        '"permissionDecisionReason": "bad \\ud800"}}'
    )
    v = interpret_stdout(HookEvent.PRE_TOOL_USE, stdout)
    assert (v.decision, v.reason) == (HookDecision.DENY, "bad \ufffd")
    v.reason.encode("utf-8")  # what reaches the model and the store can be written


def test_pre_tool_use_permission_decision_deny() -> None:
    data = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "use rg, not grep",
        }
    }
    v = interpret_stdout(HookEvent.PRE_TOOL_USE, out(data))
    assert (v.decision, v.reason, v.warnings) == (HookDecision.DENY, "use rg, not grep", ())


@pytest.mark.parametrize("decision", ["allow", "ask"])
def test_permission_allow_and_ask_have_no_effect(decision: str) -> None:
    data = {"hookSpecificOutput": {"permissionDecision": decision}}
    v = interpret_stdout(HookEvent.PRE_TOOL_USE, out(data))
    assert v.decision is HookDecision.CONTINUE
    assert "no effect" in v.warnings[0]


def test_permission_request_decision_behavior_deny() -> None:
    data = {"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "nope"}}}
    v = interpret_stdout(HookEvent.PERMISSION_REQUEST, out(data))
    assert (v.decision, v.reason) == (HookDecision.DENY, "nope")


def test_deny_on_an_event_without_a_tool_call_is_ignored_with_a_warning() -> None:
    data = {"hookSpecificOutput": {"permissionDecision": "deny"}}
    v = interpret_stdout(HookEvent.STOP, out(data))
    assert v.decision is HookDecision.CONTINUE
    assert "no tool call to deny" in v.warnings[0]


@pytest.mark.parametrize(
    "event", [HookEvent.POST_TOOL_USE, HookEvent.STOP, HookEvent.USER_PROMPT_SUBMIT]
)
def test_decision_block_with_reason(event: HookEvent) -> None:
    v = interpret_stdout(event, out({"decision": "block", "reason": "tests fail"}))
    assert (v.decision, v.reason) == (HookDecision.BLOCK, "tests fail")


def test_continue_false_blocks_with_stop_reason() -> None:
    v = interpret_stdout(HookEvent.PRE_TOOL_USE, out({"continue": False, "stopReason": "halt"}))
    assert (v.decision, v.reason) == (HookDecision.BLOCK, "halt")


def test_continue_false_on_session_end_only_warns() -> None:
    v = interpret_stdout(HookEvent.SESSION_END, out({"continue": False}))
    assert v.decision is HookDecision.CONTINUE
    assert "cannot be blocked" in v.warnings[0]


def test_additional_context_and_system_message() -> None:
    data = {
        "systemMessage": "formatted 2 files",
        "hookSpecificOutput": {"additionalContext": "ruff reformatted x.py"},
    }
    v = interpret_stdout(HookEvent.POST_TOOL_USE, out(data))
    assert v.decision is HookDecision.CONTINUE
    assert v.context == "ruff reformatted x.py"
    assert v.warnings == ("formatted 2 files",)


def test_context_is_capped() -> None:
    data = {"hookSpecificOutput": {"additionalContext": "x" * (CONTEXT_CAP + 50)}}
    v = interpret_stdout(HookEvent.USER_PROMPT_SUBMIT, out(data))
    assert v.context is not None
    assert v.context.endswith("[... 50 more characters cut by rawtrio]")


def test_fields_of_the_wrong_type_are_named_and_ignored() -> None:
    data = {"continue": "no", "decision": 3, "hookSpecificOutput": []}
    v = interpret_stdout(HookEvent.PRE_TOOL_USE, out(data))
    assert v.decision is HookDecision.CONTINUE
    assert v.warnings == (
        "ignored 'continue': expected bool, got string",
        "ignored 'decision': expected str, got number",
        "ignored 'hookSpecificOutput': expected dict, got array",
    )


def test_unknown_fields_are_ignored_and_the_deny_wins_over_a_block() -> None:
    data = {
        "decision": "block",
        "reason": "r1",
        "updatedInput": {"command": "rm -rf /"},
        "hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "r2"},
    }
    v = interpret_stdout(HookEvent.PRE_TOOL_USE, out(data))
    assert (v.decision, v.reason) == (HookDecision.DENY, "r2")


def test_a_json_array_is_plain_text() -> None:
    v = interpret_stdout(HookEvent.USER_PROMPT_SUBMIT, "[1, 2]")
    assert v.context == "[1, 2]"
