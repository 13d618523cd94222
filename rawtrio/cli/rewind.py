"""`rawtrio rewind`: take a session back to just before one of its prompts.

`--to N` names prompt N (1-based; `--list` shows them). `--both` (the default) restores
the files and forks the conversation, `--files` only restores the files, `--conversation`
only forks. The fork's id is printed on stdout (alone, for scripts); what was done goes to
stderr. A file changed outside rawtrio since is a conflict: nothing is done, the files are
listed and the exit code is `EXIT_CONFLICT` (6) unless `--force` (docs/checkpoints.md).
Without `--session`, the session last used in the current directory is rewound. The
rewind holds the session's writer lease: a session open in another process (a chat, a
headless run) is refused with exit code 5, naming the holder. A session live in this state
directory's host (`rawtrio serve`, of this version) is rewound by the host
(`_rawtrio/rewind`), with the output and exit code of a local run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from rawtrio.cli.undo import EXIT_CONFLICT
from rawtrio.contracts import ExitCode
from rawtrio.errors import RawtrioError, SessionLocked, UsageError

if TYPE_CHECKING:
    from rawtrio.checkpoints.rewind import What
    from rawtrio.host.client import HostConnection
    from rawtrio.runtime.runtime import Runtime


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rawtrio rewind",
        description="Take a session back to just before one of its prompts: its files, "
        "its conversation (forked; the session itself is kept), or both "
        "(docs/checkpoints.md).",
    )
    p.add_argument("--session", metavar="ID", help="a session (id or unique prefix)")
    p.add_argument("--to", metavar="N", type=int, help="prompt N of the session (1, 2, …)")
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--both",
        dest="what",
        action="store_const",
        const="both",
        help="restore the files and fork the conversation (the default)",
    )
    what.add_argument(
        "--files", dest="what", action="store_const", const="files", help="the files only"
    )
    what.add_argument(
        "--conversation",
        dest="what",
        action="store_const",
        const="conversation",
        help="fork the conversation only; the files stay as they are",
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite files changed outside rawtrio since"
    )
    p.add_argument("--list", action="store_true", help="list the prompts and change nothing")
    p.set_defaults(what="both")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not args.list and args.to is None:
        print("rawtrio rewind: --to N is needed (--list shows the prompts)", file=sys.stderr)
        return ExitCode.USAGE
    if args.to is not None and args.to < 1:
        print(
            f"rawtrio rewind: --to takes a prompt number (1, 2, …), not {args.to}", file=sys.stderr
        )
        return ExitCode.USAGE
    from rawtrio.cli.undo import through_holder

    # Outside trio: the host client blocks. A host that let the session go: rewound here.
    return through_holder(
        lambda: trio.run(_run, args), lambda host, exc: _rewind_in_host(host, exc, args), "rewind"
    )


async def _run(args: argparse.Namespace) -> int:
    from rawtrio.app.application import open_app
    from rawtrio.cli.sessions import fail

    try:
        async with open_app(configure=False, retention=False) as app:
            return await _rewind(app.runtime, args)
    except SessionLocked:
        raise  # `main` asks the host that holds the session, or refuses
    except RawtrioError as exc:
        return fail(exc)
    except OSError as exc:
        print(f"rawtrio rewind: {exc}", file=sys.stderr)
        return ExitCode.ERROR


async def _rewind(runtime: Runtime, args: argparse.Namespace) -> int:
    from rawtrio.app.choice import resolve_id, writer_lease
    from rawtrio.checkpoints import rewind
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    if args.session is not None:
        session_id = await resolve_id(runtime, args.session)
    else:
        here = await runtime.list_sessions(cwd=str(Path.cwd()))
        if not here:
            raise UsageError(f"no stored session in {Path.cwd()}; name one with --session")
        session_id = here[0].id
    if args.list:  # reading needs no lease
        return await _list(runtime, session_id)
    async with writer_lease(runtime, session_id):
        record = await runtime.get_session(session_id)
        prompts = rewind.prompts_of(await runtime.session_events(session_id))
        store = CheckpointStore(checkpoints_root(), Path(record.cwd))
        what: What = args.what
        result = await rewind.rewind(
            runtime, store, session_id, prompts, args.to, what, force=args.force
        )
    if result.session_id is not None:
        print(result.session_id)
    print(result.describe(), file=sys.stderr)
    if not result.applied:
        return EXIT_CONFLICT
    return ExitCode.COMPLETED


def _rewind_in_host(host: HostConnection, exc: SessionLocked, args: argparse.Namespace) -> int:
    """Rewind in the host that has the session live, as a local run would say it."""
    from rawtrio.cli.undo import ask_host, host_refused
    from rawtrio.host.client import RemoteError

    params: dict[str, object] = {
        "sessionId": exc.session_id,
        "prompt": args.to,
        "restore": args.what,
        "force": args.force,
    }
    answer = ask_host(host, "_rawtrio/rewind", params, exc, "rewind")
    if isinstance(answer, int):
        return answer
    if isinstance(answer, RemoteError):
        return host_refused(answer, "rewind")
    fork = answer.get("sessionId")
    if isinstance(fork, str):
        print(fork)
    print(answer.get("text", ""), file=sys.stderr)
    if answer.get("applied") is not True:
        return EXIT_CONFLICT
    return ExitCode.COMPLETED


async def _list(runtime: Runtime, session_id: str) -> int:
    from rawtrio.checkpoints import rewind
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    record = await runtime.get_session(session_id)
    prompts = rewind.prompts_of(await runtime.session_events(session_id))
    store = CheckpointStore(checkpoints_root(), Path(record.cwd))
    sets = await trio.to_thread.run_sync(store.change_sets, session_id)
    print(f"session {session_id} ({record.title or 'untitled'}):")
    for p in prompts:
        changed = [c for c in sets if c.turn_id == p.turn_id]
        note = "".join(f"  [#{c.number} {c.summary()}, {c.state}]" for c in changed)
        print(f"  {p.number:>3}  {p.label()!r}{note}")
    if not prompts:
        print("  no prompts")
    return ExitCode.COMPLETED
