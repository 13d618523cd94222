"""The scripted turns the stress suite cancels, one per shape of work a turn can be doing.

Each scenario is a fake-model script (the format of `rawtrio.testing.fake_model.scenario`)
plus what the harness needs to judge a run: the prompt that starts the turn, the phases a
cancel must land in at least once, and a marker file whose existence proves that a tool
call ran. Every script also answers `FOLLOWUP_PROMPT`, the follow-up turn the harness sends
after each run to prove the next request is accepted (I1).

Timings are small real-time values (a few milliseconds between stream events, a 0.3 s
command, `sigterm_grace_s=0.2`), so one run takes well under a second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rawtrio.messages import ProviderKind
from rawtrio.tools.settings import ToolSettings

WIRES: Final[tuple[ProviderKind, ...]] = ("anthropic", "openai-chat", "openai-responses")

#: The follow-up turn sent after every run (matched before any scenario rule).
FOLLOWUP_PROMPT: Final = "stress-followup: are you still there?"
FOLLOWUP_REPLY: Final = "Yes, still here; the previous turn is behind us."

#: Tool settings of every stress session: a short grace so a cancelled run ends fast.
TOOL_SETTINGS: Final = ToolSettings(sigterm_grace_s=0.2, bash_timeout_s=30.0)


class Phase:
    """Where a turn was when the cancel landed, read from the turn state (`runtime/turn.py`)."""

    START = "start"  # before the user message is committed
    STREAMING = "streaming"  # a model response streams, no tool call announced yet
    STREAMING_TOOL_CALL = "streaming tool call"  # streaming, a tool call was announced
    BATCH_COMMITTED = "tool batch committed"  # calls committed, none started or finished
    TOOL_RUNNING = "tool running"  # a handler runs (`turn.running`)
    BETWEEN_CALLS = "between calls"  # some results of the batch committed, more pending
    BETWEEN_STEPS = "between steps"  # all results committed, next request not streaming yet
    COMMIT = "commit"  # a store commit (message, results, outcome) is in progress
    HOOK = "hook"  # a hook subprocess runs (PreToolUse, PostToolUse, …)
    PERMISSION_WAIT = "permission wait"  # a call waits for an answer from the approval broker
    COMPACTION = "compaction"  # an automatic compaction runs inside the turn
    STORE_ERROR = "store error"  # a store write of the turn failed; the turn is not over yet
    RETRY_WAIT = "retry wait"  # a model request failed; the retry has not been sent yet
    CHILD_STREAMING = "child streaming"  # a `task` child's model response streams
    CHILD_TOOL_RUNNING = "child tool running"  # a `task` child's tool call runs
    FINISHING = "finishing"  # the final answer is committed; the turn is ending
    AFTER_END = "after end"  # the turn had already ended: the cancel found nothing

    ORDER: Final = (
        START,
        STREAMING,
        STREAMING_TOOL_CALL,
        BATCH_COMMITTED,
        TOOL_RUNNING,
        BETWEEN_CALLS,
        BETWEEN_STEPS,
        COMMIT,
        HOOK,
        PERMISSION_WAIT,
        COMPACTION,
        STORE_ERROR,
        RETRY_WAIT,
        CHILD_STREAMING,
        CHILD_TOOL_RUNNING,
        FINISHING,
        AFTER_END,
    )

    #: Phases that count as "streaming" for the coverage requirement.
    STREAMING_ANY: Final = frozenset({STREAMING, STREAMING_TOOL_CALL})
    #: A cancel landing here may find the work done, so the turn may still complete: a
    #: commit runs shielded, and so does closing a stream whose final event was read.
    #: (Streaming a step that asks for tools is excluded by the check itself.)
    MAY_COMPLETE: Final = frozenset({STREAMING, COMMIT, FINISHING, AFTER_END})


@dataclass(frozen=True)
class StressScenario:
    name: str
    description: str
    prompt: str
    #: The replies to `prompt`, in step order (fake-model reply objects).
    replies: tuple[Mapping[str, Any], ...]
    #: Each entry is a set of phases; at least one cancel must land in one of each set.
    required: tuple[frozenset[str], ...]
    #: A file (relative to the session's cwd) that exists only if a tool call ran.
    marker: str | None = None
    tags: frozenset[str] = field(default_factory=frozenset)
    #: The turn starts session-owned work (background jobs) that rightly outlives it: the
    #: "nothing left running" check then happens after the session closes, not the turn.
    session_scoped: bool = False
    #: Extra `SessionOptions` fields for a run, given its working directory (e.g. the MCP
    #: servers of stress/scenarios_mcp.py); the harness passes them to `SessionOptions`.
    session_options: Callable[[Path], Mapping[str, Any]] | None = None
    #: `ProviderSettings` fields that differ from the harness's (e.g. `max_retries`).
    provider_options: Mapping[str, Any] = field(default_factory=dict)
    #: Prompts of uncounted turns run before the measured one (e.g. to give a compaction
    #: something to summarize); each needs a rule in `extra_rules` or `replies`.
    setup_prompts: tuple[str, ...] = ()
    #: More fake-model rules, matched after the follow-up's and before the prompt's.
    extra_rules: tuple[Mapping[str, Any], ...] = ()
    #: Answer each permission request this many seconds after it was asked (None: the
    #: scenario asks nothing; the harness's scripted approver is not started).
    approve_after_s: float | None = None
    #: Fail the store write number `1 + (k - 1) % W` of the measured turn once (W: the
    #: baseline's writes), with the store's own error class (stress/faults.py).
    store_faults: bool = False
    #: A scripted `error` reply is sent once per (user text, step); a retry then gets the
    #: reply's text (stress/faults.py `FlakyOnce`).
    errors_once: bool = False

    def script(self) -> dict[str, Any]:
        """The fake-model scenario dict for this stress scenario and the follow-up turn."""
        return {
            "rules": [
                {"match": "stress-followup", "replies": [{"text": FOLLOWUP_REPLY, "chunk": 16}]},
                *(dict(r) for r in self.extra_rules),
                {"match": self.prompt, "replies": [dict(r) for r in self.replies]},
            ]
        }


_STORY = (
    "Once upon a time a small trio task set out to stream a long reply, one chunk at a "
    "time, never knowing when the user might press Escape. It kept its transcript tidy: "
    "nothing half-written ever reached the model context, and every child it started was "
    "reaped before the turn reported its one and only ending. The end."
)

STREAM = StressScenario(
    name="stream",
    description="one long text reply streamed in small chunks with small delays",
    prompt="stress-stream: tell me a story",
    replies=({"text": _STORY, "chunk": 8, "delay_ms": 2},),
    required=(Phase.STREAMING_ANY,),
)

TOOL = StressScenario(
    name="tool",
    description="stream → bash subprocess (echo start; sleep 0.3; echo end) → stream",
    prompt="stress-tool: run the slow command",
    replies=(
        {
            "text": "Let me run the command for you and watch what it prints.",
            "chunk": 6,
            "delay_ms": 2,
            "tool_calls": [
                {"name": "bash", "arguments": {"command": "echo start; sleep 0.3; echo end"}}
            ],
        },
        {"text": "It printed start, then end after a short pause.", "chunk": 6, "delay_ms": 2},
    ),
    required=(Phase.STREAMING_ANY, frozenset({Phase.TOOL_RUNNING})),
    tags=frozenset({"bash"}),
)

LATE_MARKER: Final = "late-call-ran.txt"

LATE_CALL = StressScenario(
    name="late-call",
    description="text, then a tool call whose arguments stream slowly; it must not run if "
    "the stream was cut",
    prompt="stress-late: write the marker",
    replies=(
        {
            "text": "I will write the marker file once I have worked out its contents.",
            "chunk": 3,
            "delay_ms": 3,
            "tool_calls": [{"name": "bash", "arguments": {"command": f"echo ran > {LATE_MARKER}"}}],
        },
        {"text": "The marker is written.", "chunk": 8, "delay_ms": 2},
    ),
    required=(Phase.STREAMING_ANY, frozenset({Phase.STREAMING_TOOL_CALL})),
    marker=LATE_MARKER,
    tags=frozenset({"bash"}),
)

SCENARIOS: Final[dict[str, StressScenario]] = {s.name: s for s in (STREAM, TOOL, LATE_CALL)}


def required_text(required: frozenset[str]) -> str:
    return " or ".join(sorted(required))


def _register_tool_scenarios() -> None:
    """The process-starting tool scenarios live in their own module (stress/scenarios_tools.py)."""
    from stress.scenarios_tools import TOOL_SCENARIOS

    SCENARIOS.update(TOOL_SCENARIOS)
    from stress.scenarios_mcp import MCP_SCENARIOS

    SCENARIOS.update(MCP_SCENARIOS)
    from stress.scenarios_hard import HARD_SCENARIOS

    SCENARIOS.update(HARD_SCENARIOS)
    from stress.scenarios_subagents import SUBAGENT_SCENARIOS

    SCENARIOS.update(SUBAGENT_SCENARIOS)


_register_tool_scenarios()
