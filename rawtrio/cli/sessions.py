"""Stored sessions from the command line: which session a run works in, and `rawtrio sessions`.

Two jobs, both about finding sessions in the durable store by what the user typed:

- `start_session` gives the chat and `rawtrio -p` their session: a new one, the latest of
  the working directory (`--continue`), a given one (`--resume ID`), or a new copy of
  either (`--fork`, via `Runtime.fork_session`; the source is left as it was). Opening an
  existing session takes its writer lease — `SessionLocked` while another process has it
  open — and repairs what a killed writer left (the runtime does both).
- `main` runs the `sessions` subcommands: `list`, `show`, `search`, `export`, `rm`,
  `rename`. Reading needs no lease, so `list`, `show`, `search` and `export` work while
  a session runs elsewhere; `rm` and `rename` write, so they need it.

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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import trio

from rawtrio import events as ev
from rawtrio.cli.signals import SignalLatch, stopped_by_signal
from rawtrio.contracts import ExitCode
from rawtrio.errors import RawtrioError, SessionLocked, UnknownSession, UsageError, exit_code_for
from rawtrio.frozen import thaw
from rawtrio.runtime.runtime import open_runtime
from rawtrio.store.base import SessionRecord
from rawtrio.store.paths import default_db_path
from rawtrio.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from rawtrio.runtime.runtime import Runtime
    from rawtrio.runtime.session import Session, SessionOptions

MIN_PREFIX = 4
#: Lines of a tool result that `show` prints; the rest is counted, not shown.
RESULT_LINES = 6


# --- which session a run works in ---------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """The session flags of a run (`--continue`, `--resume ID`, `--fork`, `--cwd`)."""

    continue_: bool = False
    resume: str | None = None
    fork: bool = False
    #: `--cwd` was given (it then has to agree with a resumed session's directory).
    explicit_cwd: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Choice:
        return cls(args.continue_, args.resume, args.fork, args.cwd is not None)

    @property
    def new(self) -> bool:
        return not (self.continue_ or self.resume)


async def start_session(runtime: Runtime, choice: Choice, options: SessionOptions) -> Session:
    """The live session the run works in. Raises `UsageError`, `UnknownSession`,
    `SessionLocked` (another process has it open) or a store error."""
    if choice.new:
        return await runtime.create_session(options)
    if choice.continue_:
        latest = await runtime.list_sessions(cwd=str(options.cwd))
        if not latest:
            raise UsageError(
                f"--continue: no stored session in {options.cwd} (start one without --continue)"
            )
        source = latest[0]
    else:
        assert choice.resume is not None
        source = await runtime.get_session(await resolve_id(runtime, choice.resume))
    cwd = Path(source.cwd)
    if choice.explicit_cwd and cwd != options.cwd:
        raise UsageError(
            f"--cwd: session {source.id} works in {cwd}; leave out --cwd to resume it there"
        )
    if not await trio.Path(cwd).is_dir():
        raise UsageError(f"session {source.id} works in {cwd}, which is no longer a directory")
    # A resumed session keeps its directory (its system prompt was made for it); provider,
    # model and limits are this run's.
    options = dataclasses.replace(options, cwd=cwd)
    session_id = await runtime.fork_session(source.id) if choice.fork else source.id
    return await runtime.open_session(session_id, options)


async def resolve_id(runtime: Runtime, text: str) -> str:
    """The id `text` names: itself, or the one stored id it is a prefix of."""
    try:
        return (await runtime.get_session(text)).id
    except UnknownSession:
        if len(text) < MIN_PREFIX:
            raise
    found = [r.id for r in await runtime.list_sessions() if r.id.startswith(text)]
    if len(found) > 1:
        raise UsageError(f"{text!r} is the start of {len(found)} session ids; give more of it")
    if not found:
        raise UnknownSession(text)
    return found[0]


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


def render_event(e: ev.Event) -> list[str]:
    """What a person reads for one display event (streaming residue renders as nothing)."""
    if isinstance(e, ev.UserMessageCommitted):
        return ["", *_indent(e.text, "> ")]
    if isinstance(e, ev.AssistantMessageCommitted):
        lines = [e.text.rstrip("\n")] if e.text else []
        for _, name, args in e.tool_calls:
            lines.append(f"  → {name} {json.dumps(thaw(args), ensure_ascii=False)}")
        return lines
    if isinstance(e, ev.StreamInterrupted):
        return [*_indent(e.partial_text or "(no text yet)", ""), f"  [reply cut off: {e.reason}]"]
    if isinstance(e, ev.ToolCallFinished):
        by = f" by {e.denied_by}" if e.denied_by else ""
        return [f"  ← {e.name} {e.status}{by}", *_indent(e.content, "      ", RESULT_LINES)]
    if isinstance(e, ev.PermissionAnswered):
        return [f"  permission for {e.call_id}: {e.decision}"]
    if isinstance(e, ev.Notice):
        return [f"  ({e.level}: {e.text})"]
    if isinstance(e, ev.TurnEnded):
        return [f"[turn {e.outcome}: {e.reason}]"]
    return []


def render_history(
    record: SessionRecord, history: Sequence[ev.Event], out: TextIO, *, turns: int | None = None
) -> None:
    """A session's display history as text; only its last `turns` turns when given."""
    starts = [i for i, e in enumerate(history) if isinstance(e, ev.UserMessageCommitted)]
    if turns is not None and len(starts) > turns > 0:
        history = history[starts[-turns] :]
    out.write(f"{record.title or 'untitled'}  ({record.id})\n")
    out.write(
        f"{record.cwd} · {record.provider} {record.model} · {record.message_count} messages"
        f" · updated {_stamp(record.updated_at)}\n"
    )
    for e in history:
        for line in render_event(e):
            out.write(line + "\n")


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
        async with (
            SqliteStore(default_db_path()) as store,
            open_runtime(store, retention_days=0) as runtime,
        ):
            return await COMMANDS[args.command](runtime, args, sys.stdout)
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
    if args.json:
        out.write(json.dumps([_record_json(r) for r in records], ensure_ascii=False) + "\n")
        return ExitCode.COMPLETED
    if not records:
        print("no stored sessions", file=sys.stderr)
        return ExitCode.COMPLETED
    width = max(5, *(len(r.title) for r in records))
    out.write(f"{'ID':32}  {'UPDATED':16}  {'MSGS':>4}  {'TITLE':{width}}  DIRECTORY\n")
    for r in records:
        out.write(
            f"{r.id:32}  {_stamp(r.updated_at):16}  {r.message_count:>4}  "
            f"{r.title or 'untitled':{width}}  {r.cwd}\n"
        )
    return ExitCode.COMPLETED


async def _show(runtime: Runtime, args: argparse.Namespace, out: TextIO) -> int:
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit: expected a positive integer, got {args.limit}")
    session_id = await resolve_id(runtime, args.id)
    record = await runtime.get_session(session_id)
    render_history(record, await runtime.session_events(session_id), out, turns=args.limit)
    return ExitCode.COMPLETED


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
