"""The line-mode chat's file commands: `/undo [N]`, `/redo [N]`, `/diff [N]`, `/rewind [N]`,
`/memory`.

The same operations as the terminal chat's (docs/checkpoints.md), printed as plain text:
the checkpoint store of the session's folder is read and written in a worker thread; a
file changed outside rawtrio since the turn is never overwritten without the user's `y`
(`ask` reads the answer from the next line typed). Where the terminal chat opens a picker,
the line chat prints a numbered list and takes the next line typed as the answer; an empty
line, anything else, Ctrl-C or the end of input chooses nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from rawtrio.errors import UsageError
from rawtrio.runtime import Session

if TYPE_CHECKING:
    from rawtrio.checkpoints.rewind import Forker, RewindResult

#: Asks a question and returns the line typed in answer (None: end of input or Ctrl-C).
Ask = Callable[[str], Awaitable[str | None]]


def checkpoint_number(name: str, arg: str) -> int | None:
    """The N of `/undo N`, `/redo N`, `/diff N` (None when not given)."""
    if not arg:
        return None
    if not arg.isdigit() or int(arg) < 1:
        raise UsageError(f"{name} takes a checkpoint number (1, 2, …), got {arg!r}")
    return int(arg)


async def memory_text(cwd: Path) -> str:
    """The project memory files a session in `cwd` starts with (read again now)."""
    from rawtrio.config.agents_md import find_agents_files

    found = await trio.to_thread.run_sync(find_agents_files, cwd, abandon_on_cancel=True)
    lines = [f"project memory for {cwd}:"]
    lines += [f"  {f.label()}" for f in found.files] or ["  none (no AGENTS.md or CLAUDE.md)"]
    lines += [f"note: {n}" for n in found.notices]
    return "\n".join(lines)


async def restore_text(session: Session, arg: str, *, undo: bool, ask: Ask) -> str:
    """`/undo [N]` or `/redo [N]`: what was restored. Files changed outside rawtrio since
    the turn are listed and written over only when the answer to `ask` is y."""
    name = "/undo" if undo else "/redo"
    number = checkpoint_number(name, arg)
    from rawtrio.checkpoints import restore
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    store = CheckpointStore(checkpoints_root(), session.cwd)
    run = restore.undo if undo else restore.redo
    action = "undo" if undo else "redo"
    force = False
    while True:
        try:
            outcome = await trio.to_thread.run_sync(
                functools.partial(run, store, session.id, number, force=force)
            )
        except restore.CheckpointError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"could not restore: {exc}") from None
        if outcome.applied:
            return outcome.describe(action)
        lines = [f"{name}: {len(outcome.conflicts)} file(s) changed outside rawtrio since:"]
        lines += [f"  {c.describe()}" for c in outcome.conflicts]
        lines.append("overwrite them? y = yes, anything else keeps them")
        answer = await ask("\n".join(lines))
        if answer is None or answer.strip().lower() not in ("y", "yes"):
            return f"{name}: nothing was written"
        force = True


async def diff_text(session: Session, arg: str) -> str:
    """`/diff [N]`: the last change set of the session (or checkpoint N) as unified diffs."""
    number = checkpoint_number("/diff", arg)
    from rawtrio.checkpoints.diff import diff_change_set
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    store = CheckpointStore(checkpoints_root(), session.cwd)
    sid = session.id

    def render() -> str | None:
        sets = store.change_sets(sid)
        if number is not None:
            sets = [c for c in sets if c.number == number]
        if not sets:
            return None
        cs = sets[-1]
        lines = [f"checkpoint {cs.number}: {cs.summary()}"]
        if cs.cancelled:
            lines.append("the turn was cancelled: this is what it changed up to the cut")
        if cs.state == "undone":
            lines.append("undone: /redo applies it again")
        for d in diff_change_set(store.objects, cs):
            lines += ["", d.header(), *(f"  {note}" for note in d.notes), *d.lines]
        lines += [f"not captured: {m.path} ({m.reason})" for m in cs.not_captured]
        return "\n".join(lines)

    try:
        text = await trio.to_thread.run_sync(render, abandon_on_cancel=True)
    except OSError as exc:
        raise UsageError(f"could not read the checkpoints: {exc}") from None
    if text is None:
        if number is not None:
            raise UsageError(f"this session has no checkpoint {number}")
        raise UsageError("no turn of this session has changed files yet")
    return text


async def rewind_session(
    session: Session, runtime: Forker, arg: str, ask: Ask
) -> tuple[str, RewindResult | None]:
    """`/rewind [N [both|conversation|files]]`: take the session back to just before one of
    its prompts, as the terminal chat's `/rewind` does (`rawtrio.checkpoints.rewind`).
    Without N the prompts are listed and the next line picks one; without what goes back,
    the choices are listed the same way. Files changed outside rawtrio since are listed
    and written over only when the answer is y. Returns the text to show and the result
    (None: nothing was done); the caller switches the chat to a conversation's fork."""
    from rawtrio.checkpoints import rewind

    number, what = rewind.command_args(arg)
    prompts = rewind.prompts_of(await session.events_since(0))
    if not prompts:
        raise UsageError("no prompt to rewind to yet")
    checkpoints = session.checkpoints
    store = checkpoints.store if checkpoints is not None else None
    sets = [] if store is None else await trio.to_thread.run_sync(store.change_sets, session.id)
    if number is None:
        shown = prompts[-rewind.LISTED :]
        title = "/rewind: back to just before which prompt?"
        if len(shown) < len(prompts):
            title += f" (the last {len(shown)} of {len(prompts)}; /rewind N takes any)"
        lines = [title, *(f"  {p.number}. {rewind.prompt_label(p, sets)}" for p in shown)]
        lines.append("type its number (anything else: nothing)")
        answer = (await ask("\n".join(lines)) or "").strip()
        if not answer.isdigit():
            return "/rewind: nothing was done", None
        number = int(answer)
    prompt = rewind.pick(prompts, number)
    if what is None:
        whats = rewind.choices(prompts, sets, prompt)
        lines = [f"/rewind to prompt {prompt.number}: what goes back?"]
        lines += [f"  {n}. {rewind.WHAT_LABELS[w]}" for n, w in enumerate(whats, 1)]
        lines.append("type its number (anything else: nothing)")
        answer = (await ask("\n".join(lines)) or "").strip()
        if not answer.isdigit() or not 1 <= int(answer) <= len(whats):
            return "/rewind: nothing was done", None
        what = whats[int(answer) - 1]
    force = False
    while True:
        try:
            result = await rewind.rewind(
                runtime, store, session.id, prompts, prompt.number, what, force=force
            )
        except OSError as exc:
            raise UsageError(f"could not restore the files: {exc}") from None
        if result.applied or result.session_id is not None:
            return result.describe(), result
        lines = [f"/rewind: {len(result.conflicts)} file(s) changed outside rawtrio since:"]
        lines += [f"  {c.describe()}" for c in result.conflicts]
        lines.append("overwrite them? y = yes, anything else does nothing")
        if (await ask("\n".join(lines)) or "").strip().lower() not in ("y", "yes"):
            return "/rewind: nothing was done", None
        force = True
