"""What the crash suite checks after a SIGKILL and a reopen (docs/contracts.md: I1, I6, I7).

`CrashObservation` holds what the parent saw: the child's lines (what it had made
durable), three read-only snapshots of the database — before the reopen, right after
the runtime reopened the session (crash recovery done), and after the follow-up turn —,
the runs file before and after, and the follow-up turn. `check_crash` turns it into
violations; it never raises on findings.

A session's `task` children get an observation each (`followup=False`: a child is never
continued, it is repaired when its parent is reopened), checked the same way but for the
follow-up; `check_runs_owned` checks the runs file against every session of the family.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import AssistantMessage, Message, ToolResult, check_pairing
from rawtrio.store import codec
from stress.report import Violation, format_ks

#: The start of the host note the next user message carries after a repair (§3.8).
RECOVERY_NOTE = "the previous turn was interrupted"


@dataclass(frozen=True)
class DbSnapshot:
    """One session's rows, read with a separate read-only connection."""

    context: tuple[str, ...] = ()
    #: Display events by sequence number: (type, stored body).
    events: dict[int, tuple[str, str]] = field(default_factory=dict)
    #: Turn id → stored outcome (None: no outcome yet).
    turns: dict[str, str | None] = field(default_factory=dict)
    started: frozenset[str] = frozenset()

    def messages(self) -> list[Message]:
        return [codec.message_from_row(r) for r in self.context]


def read_snapshot(db: Path, session_id: str) -> DbSnapshot:
    """The session as the file holds it now (WAL included), without writing anything."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        context = tuple(
            r[0]
            for r in conn.execute(
                "SELECT body FROM context WHERE session_id = ? ORDER BY position", (session_id,)
            )
        )
        events = {
            int(r[0]): (str(r[1]), str(r[2]))
            for r in conn.execute(
                "SELECT seq, type, body FROM events WHERE session_id = ?", (session_id,)
            )
        }
        turns = {
            str(r[0]): r[1]
            for r in conn.execute(
                "SELECT id, outcome FROM turns WHERE session_id = ?", (session_id,)
            )
        }
        started = frozenset(
            str(r[0])
            for r in conn.execute(
                "SELECT call_id FROM started_calls WHERE session_id = ?", (session_id,)
            )
        )
    finally:
        conn.close()
    return DbSnapshot(context, events, turns, started)


def read_children(db: Path, session_id: str) -> list[str]:
    """The ids of the session's `task` children and theirs, oldest first, read-only."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        found: list[str] = []
        parents = [session_id]
        while parents:
            rows = conn.execute(
                "SELECT id FROM sessions WHERE parent_id = ? ORDER BY created_at, id",
                (parents.pop(0),),
            ).fetchall()
            found += [str(r[0]) for r in rows]
            parents += [str(r[0]) for r in rows]
    finally:
        conn.close()
    return found


def lines_of(lines: list[str], session_id: str | None) -> list[str]:
    """The lines about one session: a child's (`child <id> ...`, the prefix taken off), or
    with None the session of `ready`'s."""
    if session_id is None:
        return [line for line in lines if not line.startswith("child ")]
    prefix = f"child {session_id} "
    return [line[len(prefix) :] for line in lines if line.startswith(prefix)]


@dataclass
class ChildFacts:
    """What the child's lines say was durable when it died."""

    #: Message rows of every commit that returned, in order.
    committed: list[str] = field(default_factory=list)
    #: Calls whose `mark_call_started` returned.
    started: set[str] = field(default_factory=set)
    #: Turn id → outcome, for `end_turn`s that returned.
    ended: dict[str, str] = field(default_factory=dict)
    #: Events recorded before the last write that returned (durable with it).
    durable_seq: int = 0


def child_facts(lines: list[str]) -> ChildFacts:
    facts = ChildFacts()
    recorded = 0
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "event":
            recorded = max(recorded, int(rest.split()[0]))
        elif word in ("begun", "committed", "started", "ended"):
            facts.durable_seq = recorded
            if word == "committed":
                facts.committed += json.loads(rest)
            elif word == "started":
                facts.started.add(rest)
            elif word == "ended":
                turn_id, outcome = rest.split()
                facts.ended[turn_id] = outcome
    return facts


@dataclass
class CrashObservation:
    lines: list[str]
    before: DbSnapshot
    #: Right after `runtime.open_session` (recovery done, before the follow-up).
    reopened: DbSnapshot
    after: DbSnapshot
    #: The runtime's in-memory context right after the reopen.
    context: list[Message]
    #: Lines of the runs file when the reopen began, and at the end.
    runs_before: list[str]
    runs_after: list[str]
    followup_outcome: str | None
    followup_statuses: list[int]
    followup_user_texts: list[str]
    context_after_followup: list[Message]
    #: False for a `task` child: no follow-up turn runs in it (the fields above are the
    #: stored context, and nothing was sent).
    followup: bool = True
    #: Named in findings: "" for the session itself, "child <id>" for a child.
    label: str = ""


def check_crash(obs: CrashObservation) -> list[Violation]:
    found = [*_check_i1(obs), *_check_i6(obs), *_check_i7(obs)]
    if obs.label:
        found = [Violation(v.invariant, f"{obs.label}: {v.text}") for v in found]
    return found


def check_runs_owned(
    family: list[CrashObservation], runs_before: list[str], runs_after: list[str]
) -> list[Violation]:
    """Every line of the runs file is the tag of a call of one of the sessions (the
    parent or a child) whose start was recorded; nothing ran after the reopen."""
    tags = {t for obs in family for t in _call_tags(obs.before.messages()).values() if t}
    started = {
        t
        for obs in family
        for call, t in _call_tags(obs.before.messages()).items()
        if call in obs.before.started
    }
    out: list[Violation] = []
    stray = [t for t in runs_before if t not in tags]
    if stray:
        out.append(Violation("I6", f"calls no session committed ran: {stray}"))
    unmarked = [t for t in runs_before if t in tags and t not in started]
    if unmarked:
        out.append(Violation("I6", f"calls ran without a recorded start: {unmarked}"))
    if runs_after != runs_before:
        out.append(Violation("I6", f"a call re-ran after the reopen: {runs_before} → {runs_after}"))
    return out


def runs_for(obs_messages: list[Message], runs: list[str]) -> list[str]:
    """The lines of the runs file written by these messages' calls."""
    tags = {t for t in _call_tags(obs_messages).values() if t}
    return [t for t in runs if t in tags]


def _check_i1(obs: CrashObservation) -> list[Violation]:
    out: list[Violation] = []
    for when, context in (("after the reopen", obs.context), ("after the follow-up", None)):
        problems = check_pairing(context if context is not None else obs.context_after_followup)
        if problems:
            out.append(Violation("I1", f"pairing {when}: {'; '.join(problems)}"))
    if not obs.followup:
        return out
    if obs.followup_outcome != TurnOutcome.COMPLETED.value:
        out.append(Violation("I1", f"the follow-up turn ended {obs.followup_outcome}"))
    if not obs.followup_statuses or any(s != 200 for s in obs.followup_statuses):
        out.append(
            Violation("I1", f"the follow-up's requests got HTTP {obs.followup_statuses or 'none'}")
        )
    return out


def _check_i6(obs: CrashObservation) -> list[Violation]:
    out: list[Violation] = []
    before, reopened = obs.before, obs.reopened
    # A turn without an outcome is `interrupted`; one with an outcome keeps it.
    for turn_id, outcome in reopened.turns.items():
        had = before.turns.get(turn_id)
        want = had if had is not None else TurnOutcome.INTERRUPTED.value
        if outcome != want:
            out.append(Violation("I6", f"turn {turn_id}: outcome {outcome}, expected {want}"))
    ended = Counter(
        json.loads(body).get("turn_id")
        for kind, body in reopened.events.values()
        if kind == "turn_ended"
    )
    for turn_id in reopened.turns:
        if ended[turn_id] != 1:
            out.append(Violation("I6", f"turn {turn_id} has {ended[turn_id]} turn_ended events"))
    seqs = sorted(reopened.events)
    if seqs != list(range(1, len(seqs) + 1)):
        out.append(Violation("I6", f"display sequence numbers have gaps: {_gaps(seqs)}"))
    # Results for cut calls: outcome_unknown if the start was recorded, cancelled if not.
    added = [codec.message_from_row(r) for r in reopened.context[len(before.context) :]]
    for msg in added:
        if not isinstance(msg, ToolResult):
            out.append(Violation("I6", f"the reopen added a {msg.role} message"))
            continue
        started = msg.call_id in before.started
        want = ToolStatus.OUTCOME_UNKNOWN if started else ToolStatus.CANCELLED
        if msg.status is not want or (not started and msg.started):
            out.append(
                Violation(
                    "I6",
                    f"cut call {msg.call_id}: {msg.status.value} (started={msg.started}), "
                    f"expected {want.value} (start {'recorded' if started else 'not recorded'})",
                )
            )
    # Nothing ran that was not recorded as started, nothing ran twice, nothing re-ran.
    ran = Counter(obs.runs_before)
    tags = _call_tags(before.messages())
    unmarked = [t for call, t in tags.items() if ran[t] and call not in before.started]
    if unmarked:
        out.append(Violation("I6", f"calls ran without a recorded start: {unmarked}"))
    if sum(ran.values()) > len(before.started) or any(n > 1 for n in ran.values()):
        out.append(
            Violation(
                "I6",
                f"runs file {dict(ran)} exceeds the {len(before.started)} recorded start(s)",
            )
        )
    if obs.runs_after != obs.runs_before:
        out.append(
            Violation("I6", f"a call re-ran after the reopen: {obs.runs_before} → {obs.runs_after}")
        )
    repaired = bool(added) or any(o is None for o in before.turns.values())
    noted = any(RECOVERY_NOTE in t for t in obs.followup_user_texts)
    if obs.followup and repaired and not noted:
        out.append(Violation("I6", "the follow-up's user message lacks the recovery note"))
    return out


def _check_i7(obs: CrashObservation) -> list[Violation]:
    out: list[Violation] = []
    facts = child_facts(obs.lines)
    for name, snapshot in (("the reopen", obs.reopened), ("the follow-up", obs.after)):
        if list(snapshot.context[: len(facts.committed)]) != facts.committed:
            out.append(
                Violation(
                    "I7",
                    f"after {name} the context does not start with the "
                    f"{len(facts.committed)} message(s) the child committed",
                )
            )
        if list(snapshot.context[: len(obs.before.context)]) != list(obs.before.context):
            out.append(Violation("I7", f"after {name} the stored context changed"))
        lost = [s for s, row in obs.before.events.items() if snapshot.events.get(s) != row]
        if lost:
            out.append(Violation("I7", f"after {name} display events changed: {_gaps(lost)}"))
    missing = [s for s in range(1, facts.durable_seq + 1) if s not in obs.before.events]
    if missing:
        out.append(
            Violation("I7", f"events recorded before a durable write are missing: {_gaps(missing)}")
        )
    unmarked = facts.started - obs.before.started
    if unmarked:
        out.append(Violation("I7", f"recorded call starts are missing: {sorted(unmarked)}"))
    for turn_id, outcome in facts.ended.items():
        if obs.before.turns.get(turn_id) != outcome:
            out.append(Violation("I7", f"turn {turn_id} lost its outcome {outcome}"))
    if len(obs.context) != len(obs.reopened.context):
        out.append(
            Violation(
                "I7",
                f"the runtime loaded {len(obs.context)} messages, the store has "
                f"{len(obs.reopened.context)}",
            )
        )
    return out


def _call_tags(messages: list[Message]) -> dict[str, str]:
    """Call id → the tag its command appends to the runs file."""
    tags: dict[str, str] = {}
    for msg in messages:
        if isinstance(msg, AssistantMessage):
            for call in msg.tool_calls:
                command = str((call.arguments or {}).get("command", ""))
                tags[call.id] = command.split()[1] if command.startswith("echo ") else ""
    return tags


def _gaps(values: list[int]) -> str:
    return format_ks(values)
