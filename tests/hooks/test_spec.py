from __future__ import annotations

import pytest

from rawtrio.hooks import HookEvent, HookSpec
from rawtrio.hooks.spec import SHELL


def test_tool_matcher_is_a_glob_on_the_tool_id_with_alternatives() -> None:
    spec = HookSpec(HookEvent.PRE_TOOL_USE, ("true",), matcher="edit_file|mcp/github/*")
    assert spec.matches("edit_file")
    assert spec.matches("mcp/github/create_issue")
    assert not spec.matches("write_file")
    assert not spec.matches(None)


def test_star_and_empty_matchers_match_everything() -> None:
    assert HookSpec(HookEvent.POST_TOOL_USE, ("true",), matcher="").matches("anything")
    assert HookSpec(HookEvent.POST_TOOL_USE, ("true",)).matches(None)


def test_matcher_on_an_event_without_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="takes no matcher"):
        HookSpec(HookEvent.STOP, ("true",), matcher="bash")


def test_session_start_matches_its_source() -> None:
    spec = HookSpec(HookEvent.SESSION_START, ("true",), matcher="resume")
    assert spec.matches("resume")
    assert not spec.matches("startup")


def test_string_command_without_shell_is_split_not_interpreted() -> None:
    spec = HookSpec(HookEvent.STOP, "notify 'a b' $HOME | x")
    assert spec.argv() == ("notify", "a b", "$HOME", "|", "x")


def test_shell_command_runs_through_sh() -> None:
    spec = HookSpec(HookEvent.STOP, "echo hi | wc -c", shell=True)
    assert spec.argv() == (*SHELL, "echo hi | wc -c")


def test_empty_command_and_bad_timeout_are_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        HookSpec(HookEvent.STOP, ())
    with pytest.raises(ValueError, match="empty"):
        HookSpec(HookEvent.STOP, "   ", shell=True)
    with pytest.raises(ValueError, match="timeout"):
        HookSpec(HookEvent.STOP, ("true",), timeout_s=0)


def test_event_names_are_claude_codes() -> None:
    spec = HookSpec("PreToolUse", ("true",))  # type: ignore[arg-type]
    assert spec.event is HookEvent.PRE_TOOL_USE
    assert {str(e) for e in HookEvent} == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionRequest",
        "PreCompact",
        "Stop",
        "Interrupt",
        "SessionEnd",
        "SubagentStart",
        "SubagentStop",
    }


def test_spec_is_frozen_including_env() -> None:
    spec = HookSpec(HookEvent.STOP, ["a", "b"], env={"X": "1"})  # type: ignore[arg-type]
    assert spec.command == ("a", "b")
    with pytest.raises(TypeError):
        spec.env["X"] = "2"  # type: ignore[index]
