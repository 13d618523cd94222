"""The checks run after every stress run: invariants I1–I5 of docs/contracts.md.

`check_run` takes what the harness observed (`Observation`) and returns the violations,
each naming its invariant and saying what was wrong in a sentence. The checks are:

- **I1 pairing** — `check_pairing` finds nothing, after the turn and after the follow-up
  turn; the follow-up's request got HTTP 200 from the validating fake server and the
  follow-up turn completed.
- **I2 one ending** — exactly one `TurnEnded` for the turn, the store holds the same
  outcome, and the outcome is `completed` or `cancelled` (these scripts have no errors).
- **I3 no torn messages** — every assistant message in the context is exactly the scripted
  reply of its step: the full text and every tool call with its full arguments.
- **I4 nothing runs after cancel** — no `ToolCallStarted` after the cancel's sequence
  number; a marker file exists only if its call started before the cancel; within the
  liveness bound after `TurnEnded` no task of the turn and no process carrying
  `RAWTRIO_SESSION=<session id>` is left.
- **I5 honest results** — a cancelled result with `started=True` has `elapsed_s` and, for
  bash, how the command ended and its partial output; a result with `started=False` had
  no `ToolCallStarted`; a call that did start never claims `started=False` unless its
  handler says it was cut before starting anything (content "not started: …").
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.frozen import thaw
from rawtrio.messages import AssistantMessage, Message, ToolResult, UserMessage, check_pairing
from rawtrio.testing.fake_model import Scenario
from stress.report import Violation
from stress.scenarios import Phase, StressScenario
from stress.steps import CancelMoment

SESSION_ENV_VAR = "RAWTRIO_SESSION"


@dataclass
class Observation:
    """Everything a run left behind that the invariants are checked against."""

    scenario: StressScenario
    script: Scenario
    session_id: str
    turn_id: str
    cancel: CancelMoment | None
    ended: ev.TurnEnded | None
    store_outcome: TurnOutcome | None
    events: list[ev.Event]
    context_after_turn: list[Message]
    context_final: list[Message]
    turn_tasks_left: list[str]
    processes_left: list[int]
    liveness_bound_s: float
    quiet_s: float
    followup: ev.TurnEnded | None
    followup_statuses: list[int]
    marker_exists: bool
    harness_errors: list[str] = field(default_factory=list)
    #: Store-fault scenarios: the write that failed (None: no fault fired), the session's
    #: stored context at that moment, and the stored context after the follow-up.
    fault: str | None = None
    context_at_fault: list[Message] = field(default_factory=list)
    stored_context: list[Message] = field(default_factory=list)
    #: The `task` children the turn started (and theirs), as the store holds them.
    children: list[ChildObservation] = field(default_factory=list)


@dataclass
class ChildObservation:
    """What a `task` child left behind: its stored context, history and turn outcomes."""

    session_id: str
    context: list[Message]
    events: list[ev.Event]
    #: The outcome stored for each of its turns.
    outcomes: list[TurnOutcome | None]
    processes_left: list[int]


def check_run(obs: Observation) -> list[Violation]:
    out = [Violation("harness", e) for e in obs.harness_errors]
    out += _i1_pairing(obs)
    out += _i2_one_ending(obs)
    out += _i3_no_torn_messages(obs)
    out += _i4_nothing_after_cancel(obs)
    out += _i5_honest_results(obs)
    out += _store_fault(obs)
    out += _children(obs)
    return out


def _children(obs: Observation) -> list[Violation]:
    """I1–I5 for every `task` child: each of its calls has one result, each of its turns
    one ending that agrees with the store, nothing torn, nothing of it still running, and
    the parent's `task` call says how it ended."""
    out: list[Violation] = []
    for child in obs.children:
        who = f"child {child.session_id[:8]}"
        out += [Violation("I1", f"{who}: {p}") for p in check_pairing(child.context)]
        ends = [e for e in child.events if isinstance(e, ev.TurnEnded)]
        # A child cancelled before its turn began has no turn at all: nothing to end.
        began = bool(child.context) or any(e.type == "user_message" for e in child.events)
        if [e.outcome for e in ends] != child.outcomes or len(ends) > 1 or (began and not ends):
            out.append(
                Violation(
                    "I2",
                    f"{who}: turn endings {[e.outcome.value for e in ends]} vs stored "
                    f"{[o.value if o else None for o in child.outcomes]}",
                )
            )
        for m in child.context:
            if isinstance(m, AssistantMessage) and not (m.text or m.tool_calls):
                out.append(Violation("I3", f"{who}: an empty assistant message was committed"))
            if isinstance(m, ToolResult) and m.status is ToolStatus.CANCELLED and not m.content:
                out.append(Violation("I5", f"{who}: cancelled result {m.call_id} says nothing"))
        if child.processes_left:
            out.append(Violation("I4", f"{who}: processes still running {child.processes_left}"))
    task_results = [
        m for m in obs.context_after_turn if isinstance(m, ToolResult) and m.name == "task"
    ]
    for r in task_results:
        if r.status is ToolStatus.CANCELLED and r.started and "subagent" not in r.content:
            out.append(Violation("I5", f"task call {r.call_id}: {r.content[:80]!r}"))
    return out


def _i1_pairing(obs: Observation) -> list[Violation]:
    # After an injected store fault, what the turn's ending could not write (results for cut
    # calls) is written before the next turn starts: pairing is due once the follow-up ran.
    after_turn = [] if obs.fault is not None else check_pairing(obs.context_after_turn)
    out = [Violation("I1", f"after the turn: {p}") for p in after_turn]
    out += [Violation("I1", f"after the follow-up: {p}") for p in check_pairing(obs.context_final)]
    if obs.followup is None:
        out.append(Violation("I1", "the follow-up turn did not end within the liveness bound"))
    elif obs.followup.outcome is not TurnOutcome.COMPLETED:
        out.append(
            Violation(
                "I1",
                f"the follow-up turn ended {obs.followup.outcome.value}: {obs.followup.reason}",
            )
        )
    if not obs.followup_statuses:
        out.append(Violation("I1", "the follow-up turn sent no request to the model"))
    elif any(s != 200 for s in obs.followup_statuses):
        out.append(
            Violation("I1", f"the follow-up request was refused: HTTP {obs.followup_statuses}")
        )
    return out


def _i2_one_ending(obs: Observation) -> list[Violation]:
    endings = [e for e in obs.events if isinstance(e, ev.TurnEnded) and e.turn_id == obs.turn_id]
    out: list[Violation] = []
    if obs.ended is None:
        out.append(Violation("I2", "the turn did not end within the liveness bound"))
    if len(endings) != 1:
        out.append(Violation("I2", f"{len(endings)} turn_ended events for the turn (want 1)"))
    if obs.store_outcome is None:
        out.append(Violation("I2", "the store has no outcome for the turn"))
    elif endings and endings[0].outcome is not obs.store_outcome:
        out.append(
            Violation(
                "I2",
                f"event outcome {endings[0].outcome.value} != stored {obs.store_outcome.value}",
            )
        )
    for e in endings[:1]:
        allowed = {TurnOutcome.COMPLETED, TurnOutcome.CANCELLED}
        if obs.cancel is None:
            allowed = {TurnOutcome.COMPLETED}
        if obs.fault is not None:
            allowed = _fault_outcomes(obs)
        if e.outcome not in allowed:
            out.append(Violation("I2", f"unexpected outcome {e.outcome.value}: {e.reason}"))
    return out


def _i3_no_torn_messages(obs: Observation) -> list[Violation]:
    out: list[Violation] = []
    user_text: str | None = None
    step = 0
    for i, msg in enumerate(obs.context_final):
        if isinstance(msg, UserMessage):
            user_text, step = msg.text, 0
            continue
        if not isinstance(msg, AssistantMessage):
            continue
        reply = obs.script.pick(user_text, step)
        step += 1
        if msg.text != reply.text:
            out.append(
                Violation(
                    "I3",
                    f"message {i}: text of {len(msg.text)} chars differs from the scripted "
                    f"{len(reply.text)} chars (ends {msg.text[-24:]!r})",
                )
            )
        got = [
            (c.name, thaw(c.arguments) if c.arguments is not None else c.raw_arguments)
            for c in msg.tool_calls
        ]
        want = [(c.name, json.loads(c.arguments_json())) for c in reply.tool_calls]
        if got != want:
            out.append(Violation("I3", f"message {i}: tool calls {got} != scripted {want}"))
    return out


def _i4_nothing_after_cancel(obs: Observation) -> list[Violation]:
    out: list[Violation] = []
    started = [
        e for e in obs.events if isinstance(e, ev.ToolCallStarted) and e.turn_id == obs.turn_id
    ]
    cancel = obs.cancel
    if (
        cancel is not None
        and cancel.landed
        and obs.ended is not None
        and obs.ended.outcome is not TurnOutcome.CANCELLED
        and obs.fault is None
        and _work_left(obs, cancel)
    ):
        out.append(
            Violation(
                "I4",
                f"the cancel landed in phase {cancel.phase} of step {cancel.step} with work "
                f"left, yet the turn ended {obs.ended.outcome.value}",
            )
        )
    if cancel is not None and cancel.landed:
        for e in started:
            if e.seq > cancel.seq:
                out.append(
                    Violation(
                        "I4",
                        f"tool call {e.name} ({e.call_id}) started at seq {e.seq}, after the "
                        f"cancel at seq {cancel.seq} ({cancel.phase})",
                    )
                )
    if obs.marker_exists:
        before = [e for e in started if cancel is None or not cancel.landed or e.seq <= cancel.seq]
        if not before:
            out.append(
                Violation("I4", "the marker file exists but no call started before the cancel")
            )
    if obs.turn_tasks_left:
        out.append(
            Violation(
                "I4",
                f"{len(obs.turn_tasks_left)} task(s) of the turn still running "
                f"{obs.liveness_bound_s:g} s after turn_ended: {obs.turn_tasks_left[:5]}",
            )
        )
    if obs.processes_left:
        out.append(
            Violation(
                "I4",
                f"process(es) {obs.processes_left} with {SESSION_ENV_VAR}={obs.session_id} "
                f"still alive {obs.liveness_bound_s:g} s after turn_ended",
            )
        )
    return out


def _work_left(obs: Observation, cancel: CancelMoment) -> bool:
    """Whether the turn had an unshielded checkpoint ahead of it at the cancel.

    Streaming a step whose reply asks for tools is followed by the call's checkpoint; in
    the phases outside `Phase.MAY_COMPLETE` another request or call always follows.
    """
    if cancel.phase not in Phase.MAY_COMPLETE:
        return True
    if cancel.phase == Phase.STREAMING and cancel.step >= 1:
        return bool(obs.script.pick(obs.scenario.prompt, cancel.step - 1).tool_calls)
    return False


def _i5_honest_results(obs: Observation) -> list[Violation]:
    out: list[Violation] = []
    started_ids = {
        e.call_id
        for e in obs.events
        if isinstance(e, ev.ToolCallStarted) and e.turn_id == obs.turn_id
    }
    output: dict[str, str] = {}
    for e in obs.events:
        if isinstance(e, ev.ToolOutputDelta):
            output[e.call_id] = output.get(e.call_id, "") + e.text
    for r in obs.context_final:
        if not isinstance(r, ToolResult):
            continue
        where = f"result of {r.name} ({r.call_id})"
        # A handler may begin (ToolCallStarted) and be cut before it started anything;
        # it then says so explicitly ("not started: …") — that is the honest answer.
        if r.call_id in started_ids and not r.started and not r.content.startswith("not started"):
            out.append(Violation("I5", f"{where} says started=False but the call started"))
        if r.status is not ToolStatus.CANCELLED:
            continue
        if not r.started:
            if r.call_id in started_ids:
                continue  # reported above
            continue
        if r.call_id not in started_ids:
            out.append(Violation("I5", f"{where} says started=True but no call started"))
        details = thaw(r.details) if r.details else {}
        if not isinstance(details, dict) or "elapsed_s" not in details:
            out.append(Violation("I5", f"{where}: cancelled after starting, no elapsed_s"))
            continue
        if r.name != "bash":
            continue
        if "ended_by" not in details:
            out.append(
                Violation(
                    "I5",
                    f"{where}: cancelled bash result says nothing about how the command "
                    f"ended (details {sorted(details)}; content {r.content[:80]!r})",
                )
            )
        partial = output.get(r.call_id, "").strip()
        if partial and partial not in r.content:
            out.append(
                Violation("I5", f"{where}: partial output {partial!r} missing from the result")
            )
    return out


def _fault_outcomes(obs: Observation) -> set[TurnOutcome]:
    """A turn whose store write failed ends `error`; `cancelled` if the cancel came first."""
    cancel = obs.cancel
    if cancel is not None and cancel.landed and cancel.phase != Phase.STORE_ERROR:
        return {TurnOutcome.ERROR, TurnOutcome.CANCELLED}
    return {TurnOutcome.ERROR}


def _store_fault(obs: Observation) -> list[Violation]:
    """After an injected store fault (item: no store fault takes the runtime down): the turn
    ended with an outcome that names the store, nothing stored before the fault was lost,
    and the runtime's context is what the store holds. (One ending, the outcome itself and
    the follow-up turn working once the fault cleared are checked by I1 and I2.)"""
    if obs.fault is None:
        return []
    out: list[Violation] = []
    where = f"after the injected fault in {obs.fault}"
    if obs.ended is not None and obs.ended.outcome is TurnOutcome.ERROR:
        reason = obs.ended.reason.lower()
        if "store" not in reason and "database" not in reason:
            out.append(
                Violation(
                    "store",
                    f"{where}: the turn's reason does not name the store: {obs.ended.reason!r}",
                )
            )
    kept = obs.stored_context[: len(obs.context_at_fault)]
    if kept != obs.context_at_fault:
        out.append(
            Violation(
                "store",
                f"{where}: the {len(obs.context_at_fault)} message(s) stored before the fault "
                f"are not all kept (the store now holds {len(obs.stored_context)})",
            )
        )
    if obs.stored_context != obs.context_final:
        out.append(
            Violation(
                "store",
                f"{where}: the runtime's context ({len(obs.context_final)} messages) differs "
                f"from the stored one ({len(obs.stored_context)})",
            )
        )
    return out


def session_processes(session_id: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries this session's marker."""
    needle = f"{SESSION_ENV_VAR}={session_id}".encode()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
            if needle not in environ.split(b"\0"):
                continue
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone, or not ours to read
        state = stat.rsplit(b")", 1)[-1].split()[:1]
        if state not in ([b"Z"], [b"X"]):
            found.append(int(name))
    return found
