"""Rewind a session to just before one of its prompts: the files, the conversation, or both.

The prompts are the session's `user_message` events, numbered from 1 in order (every
prompt, not only those whose turn changed files). Rewinding to prompt N:

- **files**: every change set still applied of a turn from prompt N on is undone, newest
  first (`restore.plan_rewind`). Every file is checked before anything is written; a file
  changed outside rawtrio is a conflict, and without `force` nothing at all is done.
- **conversation**: the session is forked just before prompt N (`Runtime.fork_session`
  with `before_turn`): the fork's model context and display history end where the
  prompt began. The original session is left as it was, so nothing committed is lost.

Front ends (the chat's `/rewind`, `rawtrio rewind`, `_rawtrio/rewind`) call `rewind`; it is
the same operation in each (docs/checkpoints.md).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, Protocol

import trio

from rawtrio import events as ev
from rawtrio.checkpoints.restore import (
    CheckpointError,
    Conflict,
    Outcome,
    RewindPlan,
    apply_rewind,
    finish_interrupted,
    plan_rewind,
)
from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.errors import SessionError, UsageError

if TYPE_CHECKING:
    from rawtrio.checkpoints.model import ChangeSet
    from rawtrio.checkpoints.store import CheckpointStore
    from rawtrio.store.base import SessionRecord

What = Literal["both", "conversation", "files"]
WHATS: Final[tuple[What, ...]] = ("both", "conversation", "files")
#: How the chats offer each choice once a prompt is picked ("what goes back?").
WHAT_LABELS: Final[dict[What, str]] = {
    "both": "files and conversation",
    "conversation": "conversation only (the files stay as they are)",
    "files": "files only (the conversation goes on)",
}
#: Prompts the chats' `/rewind` lists at most (the latest; `rawtrio rewind --list` shows
#: every one).
LISTED: Final = 20


@dataclass(frozen=True, slots=True)
class Prompt:
    #: 1-based, in the order of the session's display history.
    number: int
    turn_id: str
    text: str

    def label(self, width: int = 60) -> str:
        first = (self.text.splitlines() or [""])[0]
        return first if len(first) <= width else first[: width - 1] + "\u2026"


def prompts_of(events: Iterable[ev.Event]) -> list[Prompt]:
    """The session's prompts, numbered from 1, from its display history."""
    out: list[Prompt] = []
    seen: set[str] = set()
    for e in events:
        if isinstance(e, ev.UserMessageCommitted) and e.turn_id and e.turn_id not in seen:
            seen.add(e.turn_id)
            out.append(Prompt(len(out) + 1, e.turn_id, e.text))
    return out


def pick(prompts: Sequence[Prompt], number: int) -> Prompt:
    if not prompts:
        raise UsageError("the session has no prompts to rewind to")
    if not 1 <= number <= len(prompts):
        raise UsageError(f"no prompt {number}: the session has prompts 1 to {len(prompts)}")
    return prompts[number - 1]


def prompt_label(prompt: Prompt, change_sets: Sequence[ChangeSet], width: int = 50) -> str:
    """A prompt as the chats' `/rewind` lists it: its first line, quoted, and what its
    turn changed that is not undone."""
    mine = [
        c.summary() for c in change_sets if c.state == "applied" and c.turn_id == prompt.turn_id
    ]
    return f"{prompt.label(width)!r}" + (f"  ({'; '.join(mine)})" if mine else "")


def command_args(arg: str) -> tuple[int | None, What | None]:
    """The chats' `/rewind [N [both|conversation|files]]`: the prompt number and what goes
    back (None: not given, the chat asks). `UsageError` naming what is wrong."""
    words = arg.split()
    if len(words) > 2:
        raise UsageError(f"too many words in {arg!r}: /rewind [N [both|conversation|files]]")
    if not words:
        return None, None
    first = words[0]
    if not first.isdigit() or int(first) < 1:
        raise UsageError(f"N is a prompt number (1, 2, …), got {first!r}")
    if len(words) == 1:
        return int(first), None
    what = next((w for w in WHATS if w == words[1]), None)
    if what is None:
        raise UsageError(f"what goes back is one of {', '.join(WHATS)}; got {words[1]!r}")
    return int(first), what


def choices(
    prompts: Sequence[Prompt], change_sets: Sequence[ChangeSet], prompt: Prompt
) -> list[What]:
    """What the chats offer to take back to just before `prompt`: the files (with the
    conversation, or alone) only when a turn from that prompt on changed files that are
    not undone yet; the conversation always."""
    later = {p.turn_id for p in prompts[prompt.number - 1 :]}
    if any(c.state == "applied" and c.turn_id in later for c in change_sets):
        return ["both", "conversation", "files"]
    return ["conversation"]


def plan_files(
    store: CheckpointStore, session_id: str, prompts: Sequence[Prompt], prompt: Prompt
) -> RewindPlan:
    """The change sets a rewind to `prompt` undoes: those of its turn and every later one.
    Blocking: call from a worker thread."""
    finish_interrupted(store, session_id)  # an undo or redo a crash cut, first
    turns = {p.turn_id for p in prompts if p.number >= prompt.number}
    return plan_rewind(store, [c for c in store.change_sets(session_id) if c.turn_id in turns])


class Forker(Protocol):
    """What a rewind uses of a runtime (a local `Runtime` or a chat's `RemoteRuntime`)."""

    async def fork_session(
        self, source_id: str, *, before_turn: str | None = None, title: str | None = None
    ) -> str: ...

    async def get_session(self, session_id: str) -> SessionRecord: ...


@dataclass(frozen=True, slots=True)
class RewindResult:
    prompt: Prompt
    what: What
    #: The fork the conversation was rewound into (None: the conversation was not).
    session_id: str | None
    title: str | None
    #: Files changed outside rawtrio since; without `force` nothing was done.
    conflicts: tuple[Conflict, ...]
    applied: bool
    outcomes: tuple[Outcome, ...] = ()

    @property
    def restored(self) -> tuple[str, ...]:
        return tuple(sorted({p for o in self.outcomes if o.applied for p in o.restored}))

    @property
    def refused(self) -> bool:
        """Nothing was done: files changed outside rawtrio, and no `force` (a rewind that
        stopped part-way, a file changing meanwhile, did something and is not refused)."""
        return not self.applied and self.session_id is None and not self.outcomes

    def describe(self) -> str:
        """One line (and the conflicts, when refused) for a notice or the terminal."""
        head = f"rewind to prompt {self.prompt.number}"
        if self.refused:
            lines = [f"{head} refused: {len(self.conflicts)} file(s) changed outside rawtrio since"]
            lines += [f"  {c.describe()}" for c in self.conflicts]
            lines.append("nothing was done; force it to overwrite them")
            return "\n".join(lines)
        parts = []
        if self.session_id is not None:
            parts.append(f"conversation forked as {self.title!r} ({self.session_id})")
        if self.what != "conversation":
            n = len(self.restored)
            if not self.outcomes:
                parts.append("no files to restore (no later turn changed any)")
            else:
                parts.append(f"{n} file{'s' if n != 1 else ''} restored")
        lines = [f"rewound to prompt {self.prompt.number}: " + ", ".join(parts)]
        if self.applied and self.conflicts:
            lines.append(f"overwrote {len(self.conflicts)} file(s) changed outside rawtrio")
        if not self.applied:
            last = self.outcomes[-1]
            lines.append(
                f"stopped at checkpoint {last.change_set.number}: a file changed meanwhile"
            )
            lines += [f"  {c.describe()}" for c in last.conflicts]
        for o in self.outcomes:
            lines += [f"not captured, so not restored: {n.path}" for n in o.change_set.not_captured]
        return "\n".join(lines)


async def rewind(
    runtime: Forker,
    store: CheckpointStore | None,
    session_id: str,
    prompts: Sequence[Prompt],
    number: int,
    what: What,
    *,
    force: bool = False,
) -> RewindResult:
    """Rewind session `session_id` to just before prompt `number` (see the module). The
    caller makes sure no turn is running in it. `UsageError` for a prompt that is not
    there, or files to restore when there are none."""
    prompt = pick(prompts, number)
    plan: RewindPlan | None = None
    if what != "conversation":
        if store is None:
            raise UsageError("checkpoints are off for this session: its files cannot be rewound")
        try:
            plan = await trio.to_thread.run_sync(plan_files, store, session_id, prompts, prompt)
        except CheckpointError as exc:
            raise UsageError(str(exc)) from None
        if what == "files" and not plan.change_sets:
            raise UsageError(f"no files to restore: no turn from prompt {number} on changed any")
        if plan.conflicts and not force:
            return RewindResult(prompt, what, None, None, plan.conflicts, applied=False)
    new_id: str | None = None
    title: str | None = None
    if what != "files":
        record = await runtime.get_session(session_id)
        title = f"{record.title or 'untitled'} (rewound to prompt {number})"
    outcomes: list[Outcome] = []
    # From here on the rewind changes things. A cancellation (Ctrl-C, SIGTERM) landing now
    # is delivered once both halves are done, so a fork never goes without its files; the
    # deadline bounds the wait on a store or host that stopped answering.
    with trio.move_on_after(CLEANUP_DEADLINE_S) as finishing:
        finishing.shield = True
        if title is not None:
            new_id = await runtime.fork_session(session_id, before_turn=prompt.turn_id, title=title)
        if plan is not None and plan.change_sets:
            assert store is not None
            outcomes = await trio.to_thread.run_sync(
                functools.partial(apply_rewind, store, plan, force=force)
            )
    if finishing.cancelled_caught:
        raise SessionError(
            f"the rewind did not finish within {CLEANUP_DEADLINE_S:g} s: the session store "
            f"did not answer{f' after forking {new_id}' if new_id else ''}"
        )
    applied = not outcomes or outcomes[-1].applied
    conflicts = plan.conflicts if plan is not None else ()
    return RewindResult(prompt, what, new_id, title, conflicts, applied, tuple(outcomes))
