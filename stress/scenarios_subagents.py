"""Stress scenarios for concurrency inside a turn (docs/contracts.md, Concurrency inside a
turn): a `task` child streaming, running a tool subprocess, and waiting for approval; and a
group of read-only calls running side by side. The child's phases are read from the
child's own turn state (`stress/steps.py` `_child_phase`); I1–I5 are checked for the
parent as usual and for every child from the store (`stress/invariants.py`
`_children`).

- **subagent-stream** — the parent's reply asks for one `task`; the child streams a long
  text in small chunks. Required: the child streaming.
- **subagent-tool** — the child runs `bash` (`echo start; sleep 0.3; echo end`, its own
  process group), then answers. Required: a child's tool running.
- **subagent-permission** — the child's `bash` asks (the parent's rules say `ask`); the
  harness's scripted approver answers the parent's `permission_requested` 50 ms later.
  Required: a permission wait.
- **read-only-group** — one reply with four read-only calls (`list_dir`, `glob`, `grep`,
  `read_file`) that run side by side. Required: a tool running.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from rawtrio.permissions.rules import Effect, PermissionMode, Rule
from stress.scenarios import Phase, StressScenario

APPROVE_AFTER_S: Final = 0.05
_SLOW: Final = "echo start; sleep 0.3; echo end"
_QUICK: Final = "echo start; sleep 0.05; echo end"

_STORY = (
    "The child agent read the tree, one directory at a time, and wrote down what it "
    "found, knowing that its parent might be cancelled at any moment and that it would "
    "then stop, say what it had done, and leave nothing running behind."
)


def _parent(prompt: str) -> tuple[dict[str, Any], ...]:
    return (
        {
            "text": "I will hand this to a subagent.",
            "chunk": 6,
            "delay_ms": 2,
            "tool_calls": [
                {"name": "task", "arguments": {"description": "look around", "prompt": prompt}}
            ],
        },
        {"text": "The subagent has reported back.", "chunk": 6, "delay_ms": 2},
    )


def _child_bash(command: str) -> tuple[dict[str, Any], ...]:
    return (
        {
            "text": "Running it.",
            "chunk": 4,
            "delay_ms": 2,
            "tool_calls": [{"name": "bash", "arguments": {"command": command}}],
        },
        {"text": "The child's command has finished.", "chunk": 6, "delay_ms": 2},
    )


SUBAGENT_STREAM = StressScenario(
    name="subagent-stream",
    description="stream → task: the child streams a long reply → stream",
    prompt="stress-subagent-stream: delegate the story",
    replies=_parent("stress-child-story: tell it"),
    extra_rules=(
        {"match": "stress-child-story", "replies": [{"text": _STORY, "chunk": 8, "delay_ms": 2}]},
    ),
    required=(frozenset({Phase.CHILD_STREAMING}),),
    tags=frozenset({"subagent"}),
)

SUBAGENT_TOOL = StressScenario(
    name="subagent-tool",
    description="stream → task: the child runs bash (sleep 0.3) → stream",
    prompt="stress-subagent-tool: delegate the command",
    replies=_parent("stress-child-tool: run it"),
    extra_rules=(
        {
            "match": "stress-child-tool",
            "replies": list(_child_bash("echo start; sleep 0.3; echo end")),
        },
    ),
    required=(frozenset({Phase.CHILD_TOOL_RUNNING}),),
    tags=frozenset({"subagent", "bash"}),
)


def _ask_for_bash(cwd: Path) -> dict[str, Any]:
    rules = (
        Rule("task", Effect.ALLOW, origin="stress: subagents may start"),
        Rule("bash", Effect.ASK, origin="stress: ask before every command"),
    )
    return {"permission_rules": rules, "permission_mode": PermissionMode.DEFAULT}


SUBAGENT_PERMISSION = StressScenario(
    name="subagent-permission",
    description="stream → task: the child's bash waits for the parent's approver → stream",
    prompt="stress-subagent-permission: delegate it with approval",
    replies=_parent("stress-child-ask: run it if allowed"),
    extra_rules=(
        {
            "match": "stress-child-ask",
            "replies": list(_child_bash("echo start; sleep 0.05; echo end")),
        },
    ),
    required=(frozenset({Phase.PERMISSION_WAIT}),),
    tags=frozenset({"subagent", "bash", "permission"}),
    session_options=_ask_for_bash,
    approve_after_s=APPROVE_AFTER_S,
)

READ_ONLY_GROUP = StressScenario(
    name="read-only-group",
    description="stream → four read-only calls side by side → stream",
    prompt="stress-read-only: look at everything at once",
    replies=(
        {
            "text": "Looking at several things at once.",
            "chunk": 6,
            "delay_ms": 2,
            "tool_calls": [
                {"name": "list_dir", "arguments": {"path": "."}},
                {"name": "glob", "arguments": {"pattern": "**/*"}},
                {"name": "grep", "arguments": {"pattern": "stress"}},
                {"name": "read_file", "arguments": {"path": "missing.txt"}},
            ],
        },
        {"text": "That is everything there is to see.", "chunk": 6, "delay_ms": 2},
    ),
    required=(Phase.STREAMING_ANY, frozenset({Phase.TOOL_RUNNING})),
)

SUBAGENT_SCENARIOS: Final[dict[str, StressScenario]] = {
    s.name: s for s in (SUBAGENT_STREAM, SUBAGENT_TOOL, SUBAGENT_PERMISSION, READ_ONLY_GROUP)
}
