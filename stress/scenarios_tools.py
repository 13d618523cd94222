"""Stress scenarios for the process-starting tools (ISSUE 3): cancel at every scheduling
point of a turn that runs each kind of command, and check I1–I5 plus "no descendant
survives" (the harness's process check looks for the session marker, which every
descendant inherits — escaped ones included).

Register with the harness by merging `TOOL_SCENARIOS` into `stress.scenarios.SCENARIOS`
(see the tools report). The background scenario needs the session to own a
`BackgroundJobs` (`ctx.jobs`); until that is wired, its bash call returns "not started".
"""

from __future__ import annotations

import dataclasses
from typing import Final

from stress.scenarios import Phase, StressScenario

_DAEMON: Final = "setsid bash -c 'trap \"\" TERM; exec sleep 30' >/dev/null 2>&1 &"


def _bash_turn(name: str, prompt: str, command: str, **extra: object) -> StressScenario:
    return StressScenario(
        name=name,
        description=f"stream → bash ({command}) → stream",
        prompt=prompt,
        replies=(
            {
                "text": "Running the command now and watching it closely.",
                "chunk": 6,
                "delay_ms": 2,
                "tool_calls": [{"name": "bash", "arguments": {"command": command, **extra}}],
            },
            {"text": "The command has finished.", "chunk": 6, "delay_ms": 2},
        ),
        required=(Phase.STREAMING_ANY, frozenset({Phase.TOOL_RUNNING})),
        tags=frozenset({"bash"}),
    )


FOREGROUND = _bash_turn("tool-foreground", "stress-fg: run it", "echo start; sleep 0.3; echo end")
SIGTERM_IGNORING = _bash_turn(
    "tool-sigterm-ignoring",
    "stress-noterm: run it",
    "trap '' TERM; echo start; sleep 0.3; echo end",
)
DOUBLE_FORK = _bash_turn(
    "tool-double-fork", "stress-dfork: run it", f"{_DAEMON} echo start; sleep 0.3; echo end"
)
BACKGROUND = dataclasses.replace(
    _bash_turn("tool-background", "stress-bg: start it", "echo start; sleep 30", background=True),
    session_scoped=True,
)

TOOL_SCENARIOS: Final[dict[str, StressScenario]] = {
    s.name: s for s in (FOREGROUND, SIGTERM_IGNORING, DOUBLE_FORK, BACKGROUND)
}
