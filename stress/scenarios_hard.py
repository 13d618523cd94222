"""Stress scenarios for places beyond streams and tools where the invariants must hold: a hook
subprocess running, a permission wait, a compaction, a failed store write, a provider's
retry wait. Each has a required phase of its own (`Phase.HOOK`, …); the phases are read
by `stress/steps.py` (`phase_of`).

- **hook** — `bash` with a PreToolUse and a PostToolUse hook, each a real `/bin/sh`
  process that reads its JSON on stdin and sleeps 50 ms.
- **permission** — `bash` under an `ask` rule; the harness's scripted approver answers
  `allow_once` 50 ms after each `permission_requested`.
- **compaction** — two uncounted setup turns fill a 4,000-token window; the measured
  turn's first request passes the threshold, so an automatic compaction runs inside the
  turn: its summary request streams from the fake model, then the context is replaced.
- **store-fault** — a `bash` turn whose store fails (`StoreFull`) once, at the turn's
  write number 1 + (k − 1) mod W (W: the baseline's writes), so every commit point fails
  in some run. Checked (stress/invariants.py `_store_fault`): the turn ends with one
  outcome, `error` when the fault fired (or `cancelled` when the cancel came first), with
  a message that names the store; nothing stored before the fault is lost; the runtime
  survives; the follow-up turn works (the fault cleared).
- **retry** — the first request of each step is answered 529 with `retry-after: 0.05`
  (once: `FlakyOnce`); the provider retries (`max_retries=2`) and the stream goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from rawtrio.context.compaction import CompactionSettings
from rawtrio.hooks import HookEvent, HookSpec
from rawtrio.permissions.rules import Effect, PermissionMode, Rule
from stress.scenarios import Phase, StressScenario

#: A hook that reads its input and takes a little while: a real process to cancel.
HOOK_COMMAND: Final = "cat > /dev/null; sleep 0.05"
#: Seconds the scripted approver waits before answering a permission request.
APPROVE_AFTER_S: Final = 0.05


def _bash_replies(command: str, text: str) -> tuple[dict[str, Any], ...]:
    return (
        {
            "text": text,
            "chunk": 6,
            "delay_ms": 2,
            "tool_calls": [{"name": "bash", "arguments": {"command": command}}],
        },
        {"text": "The command has finished.", "chunk": 6, "delay_ms": 2},
    )


def hook_options(cwd: Path) -> dict[str, Any]:
    hooks = tuple(
        HookSpec(event=event, command=HOOK_COMMAND, matcher="bash", shell=True, timeout_s=10.0)
        for event in (HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE)
    )
    return {"hooks": hooks}


HOOK = StressScenario(
    name="hook",
    description="stream → PreToolUse hook (sh: read stdin, sleep 50 ms) → bash → PostToolUse "
    "hook → stream",
    prompt="stress-hook: run it under hooks",
    replies=_bash_replies("echo start; sleep 0.05; echo end", "Running it; the hooks watch."),
    required=(Phase.STREAMING_ANY, frozenset({Phase.HOOK})),
    tags=frozenset({"bash", "hook"}),
    session_options=hook_options,
)


def permission_options(cwd: Path) -> dict[str, Any]:
    rule = Rule("bash", Effect.ASK, origin="stress: ask before every command")
    return {"permission_rules": (rule,), "permission_mode": PermissionMode.DEFAULT}


PERMISSION = StressScenario(
    name="permission",
    description="stream → bash under an `ask` rule (the scripted approver allows it after "
    "50 ms) → stream",
    prompt="stress-permission: run it if I allow it",
    replies=_bash_replies("echo start; sleep 0.05; echo end", "I need your approval first."),
    required=(Phase.STREAMING_ANY, frozenset({Phase.PERMISSION_WAIT})),
    tags=frozenset({"bash", "permission"}),
    session_options=permission_options,
    approve_after_s=APPROVE_AFTER_S,
)

#: Sized for a 4,000-token window with only `bash` offered (the request's fixed part is
#: ~660 tokens): each setup reply is ~1,250 tokens, so the second setup request stays
#: under the threshold (0.8 × 2,976) and the measured turn's first request passes it.
_FILLER = ("The build log said nothing new; the tests were green again. " * 70).strip()
_SUMMARY = (
    "The user ran two setup turns; both produced long build logs with all tests green. "
    "Nothing is pending."
)


def compaction_options(cwd: Path) -> dict[str, Any]:
    return {
        "context_window": 4000,
        "max_output_tokens": 1024,
        "tool_selection": ("bash",),
        "compaction": CompactionSettings(keep_last_turns=1),
    }


COMPACTION = StressScenario(
    name="compaction",
    description="two setup turns fill the window → the turn's automatic compaction (a "
    "streamed summary request, then the context replaced) → stream",
    prompt="stress-compact: and now?",
    replies=(
        {"text": "After the compaction the story goes on, briefly.", "chunk": 6, "delay_ms": 2},
    ),
    required=(Phase.STREAMING_ANY, frozenset({Phase.COMPACTION})),
    tags=frozenset({"compaction"}),
    session_options=compaction_options,
    setup_prompts=("stress-setup-one: build it", "stress-setup-two: build it again"),
    extra_rules=(
        {"match": "@compaction", "replies": [{"text": _SUMMARY, "chunk": 8, "delay_ms": 2}]},
        # Only a setup prompt alone: after the compaction, Anthropic's wire joins the
        # task, the summary and the measured prompt into one user message.
        {"match": "re:^stress-setup-[^\n]*$", "replies": [{"text": _FILLER, "chunk": 2000}]},
    ),
)

STORE_FAULT = StressScenario(
    name="store-fault",
    description="stream → bash → stream, with one store write of the turn failing "
    "(StoreFull) at each commit point in turn",
    prompt="stress-store: run it while the disk fills",
    replies=_bash_replies("echo start; sleep 0.05; echo end", "Running it; the disk is full."),
    required=(frozenset({Phase.STORE_ERROR}),),
    tags=frozenset({"bash", "store"}),
    store_faults=True,
)

#: The phase a cancel during the provider's retry wait lands in. Until retries with
#: backoff exist in rawtrio itself, the SDK's own retries (`max_retries`) make the wait.
RETRY_REQUIRED: Final = frozenset({Phase.RETRY_WAIT})

RETRY = StressScenario(
    name="retry",
    description="each step's first request answered 529 (retry-after 0.05 s, once) → the "
    "provider waits and retries → stream → bash → stream",
    prompt="stress-retry: try again when it is busy",
    replies=tuple(
        {**r, "error": {"status": 529, "retry_after": 0.05}}
        for r in _bash_replies("echo start; echo end", "The service is busy; retrying.")
    ),
    required=(Phase.STREAMING_ANY, RETRY_REQUIRED),
    tags=frozenset({"bash", "retry"}),
    provider_options={"max_retries": 2},
    errors_once=True,
)

HARD_SCENARIOS: Final[dict[str, StressScenario]] = {
    s.name: s for s in (HOOK, PERMISSION, COMPACTION, STORE_FAULT, RETRY)
}
