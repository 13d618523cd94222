"""`rawtrio sessions`: the stored sessions from the command line.

`main` runs the subcommands: `list`, `show`, `search`, `export`, `rm`, `rename`. Reading
needs no lease, so `list`, `show`, `search` and `export` work while a session runs
elsewhere; `rm` and `rename` write, so they need it. Which session a run works in
(`--continue`, `--resume`, `--fork`) is the application's (`rawtrio.app.choice`).

An id may be given as a unique prefix of at least `MIN_PREFIX` characters, as with git.
Exit codes follow docs/contracts.md: 0 done, 1 the store failed, 2 usage (an unknown or
ambiguous id included), 5 the session is open in another process, 130/143 a signal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import trio

from rawtrio import events as ev
from rawtrio.app import open_app
from rawtrio.app.choice import resolve_id
from rawtrio.cli.signals import SignalLatch, stopped_by_signal
from rawtrio.contracts import ExitCode
from rawtrio.errors import RawtrioError, SessionLocked, UsageError, exit_code_for
from rawtrio.frozen import thaw
from rawtrio.runtime.view import (
    ApprovalView,
    Change,
    MessageView,
    NoticeView,
    ToolCallView,
    ToolPhase,
    TranscriptView,
    TurnEndView,
    UserView,
)
from rawtrio.store.base import SessionRecord
from rawtrio.store.paths import default_db_path

#: A `task` child's record and display history, for `show`.
Nested = tuple[SessionRecord, Sequence[ev.Event]]

if TYPE_CHECKING:
    from rawtrio.runtime import Runtime

#: Lines of a tool result that `show` prints; the rest is counted, not shown.
RESULT_LINES = 6


# --- rendering ------------------------------------------------------------------------------


def _stamp(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _indent(text: str, prefix: str = "    ", max_lines: int | None = None) -> list[str]:
    lines = text.rstrip("\n").splitlines() or [""]
    shown = lines if max_lines is None else lines[:max_lines]
    out = [prefix + line for line in shown]
    if len(shown) < len(lines):
        out.append(f"{prefix}… ({len(lines) - len(shown)} more lines)")
    return out


def render_change(change: Change) -> list[str]:
    """What a person reads for one change of the transcript view, replayed from the
    display history (streamed text shows once, when its message was committed or cut)."""
    item, before = change.item, change.before
    if isinstance(item, UserView):
        return ["", *_indent(item.text, "> ")]
    if isinstance(item, MessageView):
        if item.cut is not None and not (isinstance(before, MessageView) and before.cut):
            return [*_indent(item.text or "(no text yet)", ""), f"  [reply cut off: {item.cut}]"]
        if item.committed and not (isinstance(before, MessageView) and before.committed):
            return [item.text.rstrip("\n")] if item.text else []
        return []
    if isinstance(item, ToolCallView):
        if change.committed_now:
            return [f"  → {item.name} {json.dumps(thaw(item.arguments), ensure_ascii=False)}"]
        if change.entered(ToolPhase.FINISHED):
            by = f" by {item.denied_by}" if item.denied_by else ""
            head = f"  ← {item.name} {item.status}{by}"
            return [head, *_indent(item.content, "      ", RESULT_LINES)]
        return []
    if isinstance(item, ApprovalView):
        return [f"  permission for {item.call_id}: {item.decision}"]
    if isinstance(item, NoticeView):
        return [f"  ({item.level}: {item.text})"]
    if isinstance(item, TurnEndView):
        return [f"[turn {item.outcome}: {item.reason}]"]
    return []


def render_history(
    record: SessionRecord,
    history: Sequence[ev.Event],
    out: TextIO,
    *,
    turns: int | None = None,
    children: Mapping[str, Nested] | None = None,
    prefix: str = "",
) -> None:
    """A session's display history as text; only its last `turns` turns when given. The
    history of each `task` child in `children` is shown nested where it started."""
    starts = [i for i, e in enumerate(history) if isinstance(e, ev.UserMessageCommitted)]
    if turns is not None and len(starts) > turns > 0:
        history = history[starts[-turns] :]
    if prefix:
        out.write(f"{prefix}subagent {record.title or 'untitled'}  ({record.id})\n")
    else:
        out.write(f"{record.title or 'untitled'}  ({record.id})\n")
        out.write(
            f"{record.cwd} · {record.provider} {record.model} · {record.message_count} "
            f"messages · updated {_stamp(record.updated_at)}\n"
        )
    view = TranscriptView(retain=False)
    for e in history:
        for change in view.apply(e):
            for line in render_change(change):
                out.write(f"{prefix}{line}\n")
        nested = (
            (children or {}).get(e.child_session_id) if isinstance(e, ev.SubagentStarted) else None
        )
        if nested is not None:
            render_history(*nested, out, children=children, prefix=prefix + "    │ ")


def _record_json(r: SessionRecord) -> dict[str, object]:
    data = dataclasses.asdict(r)
    del data["system_prompt"]
    return data


# --- `rawtrio sessions …` ------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rawtrio sessions",
        description="The stored sessions. An ID may be shortened to a unique prefix.",
        epilog=f"database: {default_db_path()} (directory: RAWTRIO_STATE_DIR or XDG_STATE_HOME)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ls = sub.add_parser("list", help="sessions, most recently updated first")
    ls.add_argument("--cwd", metavar="DIR", help="only sessions working in DIR")
    ls.add_argument("--json", action="store_true", help="a JSON array instead of a table")
    ls.add_argument(
        "--all", action="store_true", help="with each session's subagent sessions under it"
    )
    show = sub.add_parser("show", help="a session's history as text")
    show.add_argument("id", metavar="ID")
    show.add_argument("--limit", type=int, metavar="N", help="only the last N turns")
    find = sub.add_parser("search", help="full-text search over every session's history")
    find.add_argument(
        "query", nargs="+", metavar="WORD", help="all words must match; word* is a prefix"
    )
    find.add_argument("--cwd", metavar="DIR", help="only sessions working in DIR")
    find.add_argument("--limit", type=int, default=20, metavar="N", help="at most N hits (20)")
    find.add_argument("--json", action="store_true", help="a JSON array of hits")
    export = sub.add_parser("export", help="a session as Markdown (default) or JSON")
    export.add_argument("id", metavar="ID")
    export.add_argument("--format", choices=("markdown", "json"), default="markdown")
    export.add_argument("-o", "--output", metavar="FILE", help="write FILE instead of stdout")
    rm = sub.add_parser("rm", help="delete sessions")
    rm.add_argument("ids", nargs="+", metavar="ID")
    rename = sub.add_parser("rename", help="set a session's title")
    rename.add_argument("id", metavar="ID")
    rename.add_argument("title", metavar="TITLE")
    return p


def main(argv: list[str], latch: SignalLatch | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "rename" and not args.title.strip():
        print("rawtrio: sessions rename: the title is empty", file=sys.stderr)
        return ExitCode.USAGE
    latch = latch or SignalLatch()
    if latch.exit_code is not None:
        return latch.exit_code
    return trio.run(_run, args, latch)


async def _run(args: argparse.Namespace, latch: SignalLatch) -> int:
    """Run the command; SIGINT or SIGTERM stops it (a write under way still completes)."""
    code: int = ExitCode.ERROR
    async with stopped_by_signal(latch):
        code = await _command(args)
    return latch.exit_code or code


async def _command(args: argparse.Namespace) -> int:
    """The command with its errors turned into messages and exit codes."""
    try:
        async with open_app(configure=False, retention=False) as app:
            return await COMMANDS[args.command](app.runtime, args, sys.stdout)
    except RawtrioError as exc:
        return fail(exc)
    except OSError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.ERROR


def fail(exc: RawtrioError) -> int:
    """Say on stderr what stopped a front end; return its exit code."""
    print(f"rawtrio: {exc}", file=sys.stderr)
    return exit_code_for(exc)


def _cwd_filter(value: str | None) -> str | None:
    return None if value is None else str(Path(value).expanduser().resolve())


async def _list(runtime: Runtime, args: argparse.Namespace, out: TextIO) -> int:
    records = await runtime.list_sessions(cwd=_cwd_filter(args.cwd))
    if args.all:  # each session's `task` children right under it, indented by depth
        records = [r for top in records for r in await _with_children(runtime, top)]
    if args.json:
        out.write(json.dumps([_record_json(r) for r in records], ensure_ascii=False) + "\n")
        return ExitCode.COMPLETED
    if not records:
        print("no stored sessions", file=sys.stderr)
        return ExitCode.COMPLETED
    width = max(5, *(len(r.title) + 2 * r.depth for r in records))
    out.write(f"{'ID':32}  {'UPDATED':16}  {'MSGS':>4}  {'TITLE':{width}}  DIRECTORY\n")
    for r in records:
        title = "  " * r.depth + (r.title or "untitled")
        out.write(
            f"{r.id:32}  {_stamp(r.updated_at):16}  {r.message_count:>4}  "
            f"{title:{width}}  {r.cwd}\n"
        )
    return ExitCode.COMPLETED


async def _with_children(runtime: Runtime, record: SessionRecord) -> list[SessionRecord]:
    out = [record]
    for child in await runtime.list_children(record.id):
        out += await _with_children(runtime, child)
    return out


async def _children_histories(runtime: Runtime, session_id: str) -> dict[str, Nested]:
    """Every `task` child's record and history, and theirs, by child session id."""
    found: dict[str, Nested] = {}
    for child in await runtime.list_children(session_id):
        found[child.id] = (child, await runtime.session_events(child.id))
        found |= await _children_histories(runtime, child.id)
    return found


async def _show(runtime: Runtime, args: argparse.Namespace, out: TextIO) -> int:
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit: expected a positive integer, got {args.limit}")
    session_id = await resolve_id(runtime, args.id)
    record = await runtime.get_session(session_id)
    children = await _children_histories(runtime, session_id)
    history = await runtime.session_events(session_id)
    render_history(record, history, out, turns=args.limit, children=children)
    out.write(await trio.to_thread.run_sync(render_checkpoints, record))
    return ExitCode.COMPLETED


def render_checkpoints(record: SessionRecord) -> str:
    """The session's change sets, one per turn that changed files (docs/checkpoints.md)."""
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    sets = CheckpointStore(checkpoints_root(), Path(record.cwd)).change_sets(record.id)
    if not sets:
        return ""
    lines = ["checkpoints (rawtrio undo --session ID --turn N):"]
    for cs in sets:
        lines.append(f"  #{cs.number}  {cs.summary()}  [{cs.flags()}]  {_stamp(cs.created_at)}")
        for f in cs.files:
            mark = "A" if f.before is None else "D" if f.after is None else "M"
            lines.append(f"      {mark} {f.path}  (+{f.added} \u2212{f.removed})")
        lines += [f"      ! {n.path}: not captured, {n.reason}" for n in cs.not_captured]
    return "\n".join(lines) + "\n"


async def _search(runtime: Runtime, args: argparse.Namespace, out: TextIO) -> int:
    query = " ".join(args.query)
    hits = await runtime.search(query, cwd=_cwd_filter(args.cwd), limit=max(1, args.limit))
    if args.json:
        rows = [dataclasses.asdict(h) for h in hits]
        out.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return ExitCode.COMPLETED
    if not hits:
        print(f"no matches for {query!r}", file=sys.stderr)
    for h in hits:
        snippet = " ".join(h.snippet.split())
        out.write(f"{h.session_id}  {h.title or 'untitled'}  ({h.event_type})\n    {snippet}\n")
    return ExitCode.COMPLETED


async def _export(runtime: Runtime, args: argparse.Namespace, out: TextIO) -> int:
    text = await runtime.export_session(await resolve_id(runtime, args.id), args.format)
    if args.output is None:
        out.write(text)
    else:
        await trio.Path(args.output).write_text(text, encoding="utf-8")
    return ExitCode.COMPLETED


async def _rm(runtime: Runtime, args: argparse.Namespace, out: TextIO) -> int:
    # Every id is checked before anything is deleted: a typo deletes nothing.
    ids = [await resolve_id(runtime, text) for text in args.ids]
    code = ExitCode.COMPLETED
    for session_id in dict.fromkeys(ids):
        try:
            await runtime.delete_session(session_id)
        except SessionLocked as exc:
            print(f"rawtrio: {exc}; not deleted", file=sys.stderr)
            code = ExitCode.SESSION_LOCKED
            continue
        out.write(f"deleted {session_id}\n")
    return code


async def _rename(runtime: Runtime, args: argparse.Namespace, out: TextIO) -> int:
    session_id = await resolve_id(runtime, args.id)
    await runtime.rename_session(session_id, " ".join(args.title.split()))
    out.write(f"renamed {session_id}\n")
    return ExitCode.COMPLETED


COMMANDS = {
    "list": _list,
    "show": _show,
    "search": _search,
    "export": _export,
    "rm": _rm,
    "rename": _rename,
}
