"""HookRunner with real hook processes: input, every exit path, bad hooks, cancellation."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from rawtrio.hooks import HookDecision, HookEvent, HookSpec, payloads
from rawtrio.hooks.spec import BLOCKING_EVENTS
from rawtrio.redaction import Redactor
from tests.hooks.conftest import LIVENESS_S, MakeRunner, hook, py

ECHO_INPUT = "import sys; sys.stdout.write(sys.stdin.read())"
#: A payload for every event, built the way the loop will build them.
PAYLOADS: dict[HookEvent, dict[str, Any]] = {
    HookEvent.SESSION_START: payloads.session_start("startup"),
    HookEvent.USER_PROMPT_SUBMIT: payloads.user_prompt_submit("fix the tests"),
    HookEvent.PRE_TOOL_USE: payloads.pre_tool_use("bash", {"command": "ls"}, "call-1"),
    HookEvent.POST_TOOL_USE: payloads.post_tool_use(
        "bash", {"command": "ls"}, "call-1", status="ok", content="a\nb\n"
    ),
    HookEvent.POST_TOOL_USE_FAILURE: payloads.post_tool_use_failure(
        "bash", {"command": "false"}, "call-2", status="error", error="exit code 1"
    ),
    HookEvent.PERMISSION_REQUEST: payloads.permission_request(
        "write_file", {"path": "x"}, "call-3"
    ),
    HookEvent.PRE_COMPACT: payloads.pre_compact("auto"),
    HookEvent.STOP: payloads.stop(stop_hook_active=False, last_assistant_message="done"),
    HookEvent.INTERRUPT: payloads.interrupt(turn_id="t1", reason="cancelled by the user"),
    HookEvent.SESSION_END: payloads.session_end("closed"),
    HookEvent.SUBAGENT_START: payloads.subagent_start(
        call_id="call-2", description="count files", agent=None, child_session_id="c1", depth=1
    ),
    HookEvent.SUBAGENT_STOP: payloads.subagent_stop(
        call_id="call-2", child_session_id="c1", outcome="completed", reason="end_turn"
    ),
}


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("event", list(HookEvent))
async def test_every_event_sends_claude_code_fields_on_stdin(
    event: HookEvent, make_runner: MakeRunner, tmp_path: Path
) -> None:
    runner, receipts = make_runner(hook(event, ECHO_INPUT))
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(event, PAYLOADS[event])
    sent = json.loads(receipts[0].stdout)
    assert sent == {
        **PAYLOADS[event],
        "session_id": "sess-hooks",
        "cwd": str(tmp_path),
        "hook_event_name": str(event),
    }
    assert receipts[0].decision is HookDecision.CONTINUE
    assert outcome.receipts == tuple(receipts)
    assert not outcome.stopped


@pytest.mark.parametrize("event", list(HookEvent))
async def test_every_event_handles_exit_2(event: HookEvent, make_runner: MakeRunner) -> None:
    code = "import sys; sys.stderr.write('stop: tests are red'); sys.exit(2)"
    runner, receipts = make_runner(hook(event, code))
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(event, PAYLOADS[event])
    assert receipts[0].exit_code == 2
    assert receipts[0].stderr == "stop: tests are red"
    if event not in BLOCKING_EVENTS:
        assert not outcome.stopped
        assert receipts[0].decision is HookDecision.WARN
        assert "cannot be blocked" in outcome.warnings[0]
    elif event is HookEvent.PERMISSION_REQUEST:
        assert (outcome.denied, outcome.reason) == (True, "stop: tests are red")
    else:
        assert (outcome.blocked, outcome.reason) == (True, "stop: tests are red")


@pytest.mark.parametrize("event", list(HookEvent))
async def test_every_event_warns_on_other_exit_codes(
    event: HookEvent, make_runner: MakeRunner
) -> None:
    runner, receipts = make_runner(
        hook(event, "import sys; print('oops', file=sys.stderr); exit(1)")
    )
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(event, PAYLOADS[event])
    assert not outcome.stopped
    assert receipts[0].decision is HookDecision.WARN
    assert outcome.warnings == (f"{event} hook {receipts[0].hook!r}: exit code 1: oops",)


async def test_json_deny_and_context_from_a_claude_code_style_script(
    make_runner: MakeRunner,
) -> None:
    script = """
import json, sys
data = json.load(sys.stdin)
if "rm -rf" in data["tool_input"]["command"]:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "no rm -rf"}}))
else:
    print(json.dumps({"hookSpecificOutput": {"additionalContext": "looks fine"}}))
"""
    runner, _ = make_runner(hook(HookEvent.PRE_TOOL_USE, script, matcher="bash"))
    with trio.fail_after(LIVENESS_S):
        bad = await runner.run(
            HookEvent.PRE_TOOL_USE, payloads.pre_tool_use("bash", {"command": "rm -rf /"}, "c")
        )
        good = await runner.run(
            HookEvent.PRE_TOOL_USE, payloads.pre_tool_use("bash", {"command": "ls"}, "c")
        )
    assert (bad.denied, bad.reason, bad.context, bad.context_text()) == (
        True,
        "no rm -rf",
        (),
        None,
    )
    assert (good.stopped, good.context) == (False, ("looks fine",))
    assert good.context_text() == "[rawtrio: context from PreToolUse hooks]\nlooks fine"


async def test_only_hooks_matching_the_tool_run(make_runner: MakeRunner) -> None:
    runner, receipts = make_runner(
        hook(HookEvent.PRE_TOOL_USE, "pass", matcher="edit_file|write_file", name="edits"),
        hook(HookEvent.PRE_TOOL_USE, "pass", matcher="mcp/*", name="mcp"),
        hook(HookEvent.POST_TOOL_USE, "pass", name="post"),
    )
    with trio.fail_after(LIVENESS_S):
        await runner.run(HookEvent.PRE_TOOL_USE, payloads.pre_tool_use("write_file", {}, "c"))
    assert [r.hook for r in receipts] == ["edits"]
    assert receipts[0].subject == "write_file"


async def test_no_matching_hook_gives_an_empty_outcome(make_runner: MakeRunner) -> None:
    runner, receipts = make_runner()
    outcome = await runner.run(HookEvent.STOP, PAYLOADS[HookEvent.STOP])
    assert (outcome.stopped, outcome.receipts, receipts) == (False, (), [])


async def test_hooks_run_in_order_and_all_run_after_a_block(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    append = "import sys; open(sys.argv[1], 'a').write(sys.argv[2])"
    first = HookSpec(HookEvent.STOP, (*py(append + "; sys.exit(2)"), str(log), "1"))
    second = HookSpec(HookEvent.STOP, (*py(append), str(log), "2"))
    third = hook(HookEvent.STOP, 'print(\'{"decision": "block", "reason": "more"}\')')
    runner, receipts = make_runner(first, second, third)
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.STOP, PAYLOADS[HookEvent.STOP])
    assert log.read_text() == "12"
    assert [r.decision for r in receipts] == [
        HookDecision.BLOCK,
        HookDecision.CONTINUE,
        HookDecision.BLOCK,
    ]
    assert outcome.block_reason.endswith("\nmore")


async def test_a_hanging_hook_times_out_with_a_receipt(make_runner: MakeRunner) -> None:
    runner, receipts = make_runner(
        hook(HookEvent.PRE_TOOL_USE, "import time; time.sleep(60)", timeout_s=0.3)
    )
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.PRE_TOOL_USE, PAYLOADS[HookEvent.PRE_TOOL_USE])
    assert not outcome.stopped
    (receipt,) = receipts
    assert (receipt.decision, receipt.ended_by) == (HookDecision.WARN, "timeout")
    assert "timed out after 0.3 s; stopped with SIGTERM" in outcome.warnings[0]


async def test_a_hook_ignoring_sigterm_is_killed_after_the_grace(
    make_runner: MakeRunner,
) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    runner, receipts = make_runner(hook(HookEvent.STOP, code, timeout_s=0.3))
    with trio.fail_after(LIVENESS_S):
        await runner.run(HookEvent.STOP, PAYLOADS[HookEvent.STOP])
    assert receipts[0].signal == signal.SIGKILL
    assert "SIGTERM, then SIGKILL" in receipts[0].summary


async def test_a_hook_killed_by_a_signal_is_a_warning(make_runner: MakeRunner) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    runner, receipts = make_runner(hook(HookEvent.PRE_TOOL_USE, code))
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.PRE_TOOL_USE, PAYLOADS[HookEvent.PRE_TOOL_USE])
    assert not outcome.stopped
    assert receipts[0].signal == signal.SIGSEGV
    assert "killed by signal SIGSEGV" in outcome.warnings[0]


async def test_garbage_on_stdout_is_a_warning(make_runner: MakeRunner) -> None:
    code = "import sys; sys.stdout.buffer.write(b'{\\xff\\xfe garbage')"
    runner, receipts = make_runner(hook(HookEvent.PRE_TOOL_USE, code))
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.PRE_TOOL_USE, PAYLOADS[HookEvent.PRE_TOOL_USE])
    assert not outcome.stopped
    assert receipts[0].decision is HookDecision.WARN
    assert "not valid JSON" in receipts[0].summary


async def test_a_missing_program_is_a_warning(make_runner: MakeRunner) -> None:
    runner, receipts = make_runner(HookSpec(HookEvent.STOP, ("/nonexistent/hook",)))
    outcome = await runner.run(HookEvent.STOP, PAYLOADS[HookEvent.STOP])
    assert receipts[0].ended_by == "spawn_error"
    assert "could not start" in outcome.warnings[0]


async def test_a_hook_that_never_reads_a_large_input_still_finishes(
    make_runner: MakeRunner,
) -> None:
    runner, receipts = make_runner(hook(HookEvent.USER_PROMPT_SUBMIT, "print('ok')"))
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(
            HookEvent.USER_PROMPT_SUBMIT, payloads.user_prompt_submit("x" * 1_000_000)
        )
    assert outcome.context == ("ok",)
    assert receipts[0].exit_code == 0


async def test_huge_output_is_bounded(make_runner: MakeRunner) -> None:
    code = "import sys; sys.stdout.write('y' * 5_000_000); sys.stderr.write('e' * 5_000_000)"
    runner, receipts = make_runner(hook(HookEvent.STOP, code), output_cap=10_000)
    with trio.fail_after(LIVENESS_S):
        await runner.run(HookEvent.STOP, PAYLOADS[HookEvent.STOP])
    assert receipts[0].exit_code == 0
    assert len(receipts[0].stdout) < 3_000
    assert len(receipts[0].stderr) < 3_000


async def test_shell_hooks_get_a_shell_and_the_project_dir(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    spec = HookSpec(
        HookEvent.SESSION_START,
        'echo "$CLAUDE_PROJECT_DIR|$RAWTRIO_HOOK_EVENT|$EXTRA" | tr a-z A-Z',
        shell=True,
        env={"EXTRA": "x"},
    )
    runner, _ = make_runner(spec)
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.SESSION_START, PAYLOADS[HookEvent.SESSION_START])
    assert outcome.context == (f"{str(tmp_path).upper()}|SESSIONSTART|X",)


async def test_api_keys_are_stripped_and_secrets_redacted(
    make_runner: MakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    code = (
        "import os, sys; print(os.environ.get('ANTHROPIC_API_KEY', 'none'));"
        "sys.stderr.write('token hunter2'); sys.exit(2)"
    )
    runner, receipts = make_runner(
        hook(HookEvent.PRE_TOOL_USE, code), redactor=Redactor(["hunter2"])
    )
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.PRE_TOOL_USE, PAYLOADS[HookEvent.PRE_TOOL_USE])
    assert receipts[0].stdout == "none\n"
    assert outcome.reason == "token [redacted]"
    assert "hunter2" not in repr(receipts)


async def test_cancelling_kills_the_hook_group_and_leaves_a_receipt(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open({str(pid_file)!r}, "w").write(str(child.pid))
print("started", flush=True)
time.sleep(60)
"""
    runner, receipts = make_runner(hook(HookEvent.PRE_TOOL_USE, script))
    with trio.fail_after(LIVENESS_S), trio.CancelScope() as scope:

        async def cancel_when_started() -> None:
            # Polling: nothing signals "the hook wrote its file".
            while True:
                if pid_file.exists() and pid_file.read_text():
                    break
                await trio.sleep(0.01)
            scope.cancel(reason="turn cancelled")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_when_started)
            await runner.run(HookEvent.PRE_TOOL_USE, PAYLOADS[HookEvent.PRE_TOOL_USE])
            pytest.fail("run() returned although its scope was cancelled")
    assert scope.cancelled_caught
    (receipt,) = receipts
    assert (receipt.decision, receipt.ended_by) == (HookDecision.CANCELLED, "cancel")
    assert receipt.signal == signal.SIGTERM
    assert "cancelled with its turn" in receipt.summary
    assert gone(int(pid_file.read_text()))


async def test_session_keeps_working_after_bad_hooks(make_runner: MakeRunner) -> None:
    runner, receipts = make_runner(
        hook(HookEvent.STOP, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
        hook(HookEvent.STOP, "print('{garbage')"),
        hook(HookEvent.STOP, "import time; time.sleep(60)", timeout_s=0.2),
        hook(HookEvent.STOP, 'print(\'{"decision": "block", "reason": "keep going"}\')'),
    )
    with trio.fail_after(LIVENESS_S):
        outcome = await runner.run(HookEvent.STOP, PAYLOADS[HookEvent.STOP])
    assert [r.decision for r in receipts] == [HookDecision.WARN] * 3 + [HookDecision.BLOCK]
    assert (outcome.blocked, outcome.reason, len(outcome.warnings)) == (True, "keep going", 3)
