"""Claude Code's headless output: `--output-format stream-json` and `json` of `rawtrio -p`.

A script written for `claude -p` parses what this module makes (docs/compat.md,
"Headless (`-p`)"): `stream-json` prints one JSON object a line — a `system` line (subtype
`init`: `session_id`, `cwd`, `model`, `tools`, `permissionMode`) before the first turn,
per step an `assistant` line (an Anthropic message: `thinking`, `text` and `tool_use`
blocks; without `usage`, which the model's stream reports after the message: the `result`
line has the turn's), per tool result a `user` line (a `tool_result` block), and a `result` line at
each turn's end; `json` prints only that `result` object. rawtrio's own information rides
along under keys Claude Code does not have (`rawtrio` on the messages; `v`, `turn_id`,
`outcome`, `reason`, `steps` and rawtrio's usage keys on the result), which a Claude Code
consumer ignores. rawtrio's full event stream is `--output-format events`
(docs/contracts.md).

Everything here is computed from the turn's events (durations from their timestamps,
ids derived from the session id and `seq`), so an attached run and a local one print the
same lines for the same events. Imports nothing heavy: the attached client loads it with
the renderer (`rawtrio.cli.attach`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Final

from rawtrio import events as ev
from rawtrio.contracts import STREAM_JSON_VERSION, ToolStatus, TurnOutcome
from rawtrio.frozen import thaw

#: rawtrio's permission modes by Claude Code's names (`--permission-mode`), and back.
MODES_FROM_CLAUDE: Final = {
    "default": "default",
    "acceptEdits": "accept-edits",
    "plan": "plan",
    "bypassPermissions": "bypass",
}
MODES_TO_CLAUDE: Final = {ours: theirs for theirs, ours in MODES_FROM_CLAUDE.items()}

#: The `subtype` of the `result` object for each way a turn ends.
RESULT_SUBTYPE: Final = {
    TurnOutcome.COMPLETED: "success",
    TurnOutcome.MAX_STEPS: "error_max_turns",
    TurnOutcome.ERROR: "error_during_execution",
    TurnOutcome.CANCELLED: "error_during_execution",
    TurnOutcome.INTERRUPTED: "error_during_execution",
}

#: The namespace of the `uuid` every line carries (derived, so a rerun of the same events
#: prints the same ids).
_UUIDS: Final = uuid.UUID("6f1d3c1e-5b8a-4c55-9d0e-1f4c2a7b9e31")


def line_uuid(session_id: str, what: str) -> str:
    return str(uuid.uuid5(_UUIDS, f"{session_id}/{what}"))


@dataclass(frozen=True)
class SessionFacts:
    """What the `system`/`init` line says about the session (a live `Session`, or the
    host's `_rawtrio/session/info` answer)."""

    session_id: str
    cwd: str
    model: str
    tools: tuple[str, ...]
    mode: str
    agent: str | None = None

    @classmethod
    def from_info(cls, info: Any, agent: str | None = None) -> SessionFacts:
        data = info if isinstance(info, dict) else {}
        tools = data.get("tools")
        return cls(
            session_id=str(data.get("sessionId", "")),
            cwd=str(data.get("cwd", "")),
            model=str(data.get("model", "")),
            tools=tuple(str(t) for t in tools) if isinstance(tools, list) else (),
            mode=str(data.get("mode", "default")),
            agent=agent,
        )

    def init_message(self) -> dict[str, Any]:
        """Claude Code's `{"type": "system", "subtype": "init", …}` line."""
        return {
            "type": "system",
            "subtype": "init",
            "session_id": self.session_id,
            "cwd": self.cwd,
            "model": self.model,
            "tools": list(self.tools),
            "permissionMode": MODES_TO_CLAUDE.get(self.mode, self.mode),
            "uuid": line_uuid(self.session_id, "init"),
            "rawtrio": {"v": STREAM_JSON_VERSION, "agent": self.agent, "mode": self.mode},
        }


@dataclass
class _Step:
    model: str = ""
    started_ts: float | None = None
    thinking: list[str] = field(default_factory=list)


class ClaudeTurn:
    """Follows one turn's events and makes Claude Code's messages of it: `messages` per
    event (the `assistant` and `user` lines), `result` at the end."""

    def __init__(self, session_id: str, turn_id: str) -> None:
        self._session_id = session_id
        self._turn_id = turn_id
        self._steps: dict[int, _Step] = {}
        self._first_ts: float | None = None
        self._api_s = 0.0
        self._inputs: dict[str, tuple[str, Any]] = {}  # call id → (name, input)
        self._denials: list[dict[str, Any]] = []

    def _step(self, step: int) -> _Step:
        return self._steps.setdefault(step, _Step())

    def messages(self, event: ev.Event) -> list[dict[str, Any]]:
        """The lines this event of the turn makes (most make none)."""
        if event.turn_id != self._turn_id:
            return []
        if self._first_ts is None:
            self._first_ts = event.ts
        if isinstance(event, ev.StepStarted):
            step = self._step(event.step)
            step.model, step.started_ts = event.model, event.ts
        elif isinstance(event, ev.ThinkingDelta):
            self._step(event.step).thinking.append(event.text)
        elif isinstance(event, ev.StreamInterrupted):
            self._end_step(event.step, event.ts)
        elif isinstance(event, ev.AssistantMessageCommitted):
            self._end_step(event.step, event.ts)
            return [self._assistant(event)]
        elif isinstance(event, ev.ToolCallFinished):
            return [self._tool_result(event)]
        return []

    def _end_step(self, number: int, ts: float) -> None:
        step = self._step(number)
        if step.started_ts is not None:
            self._api_s += max(0.0, ts - step.started_ts)
            step.started_ts = None

    def _assistant(self, event: ev.AssistantMessageCommitted) -> dict[str, Any]:
        step = self._step(event.step)
        content: list[dict[str, Any]] = []
        if step.thinking:
            content.append({"type": "thinking", "thinking": "".join(step.thinking)})
        if event.text:
            content.append({"type": "text", "text": event.text})
        for call_id, name, arguments in event.tool_calls:
            tool_input = thaw(arguments) if arguments is not None else {}
            self._inputs[call_id] = (name, tool_input)
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        message: dict[str, Any] = {
            "id": line_uuid(self._session_id, f"message/{event.seq}"),
            "type": "message",
            "role": "assistant",
            "model": step.model,
            "content": content,
            "stop_reason": event.stop_reason or None,
            "stop_sequence": None,
        }
        return {
            "type": "assistant",
            "message": message,
            "parent_tool_use_id": None,
            "session_id": self._session_id,
            "uuid": line_uuid(self._session_id, f"event/{event.seq}"),
            "rawtrio": {"seq": event.seq, "turn_id": self._turn_id, "step": event.step},
        }

    def _tool_result(self, event: ev.ToolCallFinished) -> dict[str, Any]:
        if event.status is ToolStatus.DENIED:
            name, tool_input = self._inputs.get(event.call_id, (event.name, {}))
            self._denials.append(
                {"tool_name": name, "tool_use_id": event.call_id, "tool_input": tool_input}
            )
        extra: dict[str, Any] = {
            "seq": event.seq,
            "turn_id": self._turn_id,
            "status": event.status.value,
        }
        if event.denied_by is not None:
            extra["denied_by"] = event.denied_by.value
        return {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": event.call_id,
                        "content": event.content,
                        "is_error": event.status is not ToolStatus.OK,
                    }
                ],
            },
            "parent_tool_use_id": None,
            "session_id": self._session_id,
            "uuid": line_uuid(self._session_id, f"event/{event.seq}"),
            "rawtrio": extra,
        }

    def result(
        self,
        ended: ev.TurnEnded,
        usage: dict[str, int],
        cost_usd: float | None,
        totals: dict[str, Any],
    ) -> dict[str, Any]:
        """Claude Code's `result` object of the turn. `usage` is the turn's (rawtrio's
        keys), `cost_usd` its cost (None without prices), `totals` the session's
        (`session_cost_usd`, `context_tokens`, `context_window`)."""
        started = self._first_ts if self._first_ts is not None else ended.ts
        failed = ended.outcome is not TurnOutcome.COMPLETED
        result: dict[str, Any] = {
            "type": "result",
            "subtype": RESULT_SUBTYPE[ended.outcome],
            "is_error": failed,
            "duration_ms": _ms(ended.ts - started),
            "duration_api_ms": _ms(self._api_s),
            "num_turns": ended.steps,
            "result": ended.final_text,
            "session_id": self._session_id,
            "total_cost_usd": cost_usd,
            "usage": {
                **claude_usage(
                    usage["input_tokens"],
                    usage["output_tokens"],
                    usage["cache_read_tokens"],
                    usage["cache_write_tokens"],
                ),
                # rawtrio's own keys (a Claude Code consumer ignores them).
                **usage,
                "cost_usd": cost_usd,
                **totals,
            },
            "permission_denials": self._denials,
            "uuid": line_uuid(self._session_id, f"result/{self._turn_id}"),
        }
        if failed:
            result["errors"] = [ended.reason] if ended.reason else []
        # rawtrio's own keys (docs/user-guide.md, "json").
        result.update(
            v=STREAM_JSON_VERSION,
            turn_id=self._turn_id,
            outcome=ended.outcome.value,
            reason=ended.reason,
            steps=ended.steps,
        )
        return result


def claude_usage(inputs: int, outputs: int, cache_read: int, cache_write: int) -> dict[str, int]:
    """Token counts under the Anthropic API's names."""
    return {
        "input_tokens": inputs,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": outputs,
    }


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))
