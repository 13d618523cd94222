"""`rawtrio undo` and `rawtrio redo`: put back (or re-apply) the files a turn changed.

Without `--session`, the project's last checkpoint (of any session run in this directory)
is the one undone; `--turn N` names checkpoint N of the session (`rawtrio undo --list`,
`rawtrio sessions show`). A file changed outside rawtrio since the turn is a conflict:
nothing is written, the files are listed, and the exit code is `EXIT_CONFLICT` (6) unless
`--force` (docs/checkpoints.md). The change set's session is held (its writer lease) while
its files are put back: a session open in another process (a chat, a headless run, the
host) is refused with exit code 5, naming the holder — undo there, or close it first.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from rawtrio.contracts import ExitCode
from rawtrio.errors import RawtrioError, SessionLocked

if TYPE_CHECKING:
    from rawtrio.checkpoints.model import ChangeSet
    from rawtrio.checkpoints.restore import Outcome
    from rawtrio.checkpoints.store import CheckpointStore

#: Undo or redo refused because files changed outside rawtrio since the turn.
EXIT_CONFLICT: Final = 6


def build_parser(action: str) -> argparse.ArgumentParser:
    verb = "put back" if action == "undo" else "re-apply"
    p = argparse.ArgumentParser(
        prog=f"rawtrio {action}",
        description=f"{verb.capitalize()} the files a turn changed (docs/checkpoints.md).",
    )
    p.add_argument("--session", metavar="ID", help="a session (id or unique prefix)")
    p.add_argument("--turn", metavar="N", type=int, help="checkpoint N of the session")
    p.add_argument(
        "--force", action="store_true", help="overwrite files changed outside rawtrio since"
    )
    p.add_argument("--list", action="store_true", help="list the checkpoints and change nothing")
    return p


def main(argv: list[str], action: str) -> int:
    args = build_parser(action).parse_args(argv)
    from rawtrio.checkpoints.restore import CheckpointError
    from rawtrio.checkpoints.store import CheckpointStore, checkpoints_root

    root = checkpoints_root()
    cwd = Path.cwd()
    session_id: str | None = args.session
    if args.turn is not None and session_id is None:
        print(f"rawtrio {action}: --turn needs --session", file=sys.stderr)
        return ExitCode.USAGE
    store = CheckpointStore(root, cwd)
    if session_id is not None:
        found = find_session(root, session_id)
        if isinstance(found, str):
            print(f"rawtrio {action}: {found}", file=sys.stderr)
            return ExitCode.USAGE
        store, session_id = found
    if args.list:
        sets = store.change_sets(session_id)
        if not sets:
            print("no checkpoints here")
        for cs in sets:
            print(describe_line(cs))
        return ExitCode.COMPLETED
    try:
        outcome = trio.run(_restore, store, session_id, args, action)
    except CheckpointError as exc:
        print(f"rawtrio {action}: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    except SessionLocked as exc:
        print(f"rawtrio {action}: {locked_text(exc, action)}", file=sys.stderr)
        return ExitCode.SESSION_LOCKED
    except RawtrioError as exc:
        from rawtrio.cli.sessions import fail

        return fail(exc)
    except OSError as exc:
        print(f"rawtrio {action}: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    text = outcome.describe(action)
    if not outcome.applied:
        print(text, file=sys.stderr)
        return EXIT_CONFLICT
    print(text)
    return ExitCode.COMPLETED


async def _restore(
    store: CheckpointStore, session_id: str | None, args: argparse.Namespace, action: str
) -> Outcome:
    """Undo or redo under the writer lease of the change set's session."""
    from rawtrio.app.application import open_app
    from rawtrio.app.choice import writer_lease
    from rawtrio.checkpoints.restore import pick_redo, pick_undo, redo, undo

    pick = pick_undo if action == "undo" else pick_redo
    cs = await trio.to_thread.run_sync(pick, store, session_id, args.turn)
    async with (
        open_app(configure=False, retention=False) as app,
        writer_lease(app.runtime, cs.session_id),
    ):
        # Picked again under the lease, from the session alone: what it names now is final.
        run = functools.partial(
            undo if action == "undo" else redo, store, cs.session_id, args.turn, force=args.force
        )
        return await trio.to_thread.run_sync(run)


def locked_text(exc: SessionLocked, action: str) -> str:
    """Why `action` was refused, naming who holds the session and what to do instead."""
    from rawtrio.host.paths import host_paths, read_registration
    from rawtrio.store.paths import state_dir

    host = read_registration(host_paths(state_dir()).registration)
    if host is not None and host.pid == exc.pid:
        return (
            f"{exc}: the rawtrio host (`rawtrio serve`); use /{action} in a chat attached to "
            f"it, or close the session there first"
        )
    return f"{exc}; use /{action} there, or close it first"


def describe_line(cs: ChangeSet) -> str:
    prompt = cs.prompt.splitlines()[0][:60] if cs.prompt else ""
    return f"{cs.session_id[:8]}  #{cs.number}  {cs.summary()}  [{cs.flags()}]  {prompt!r}"


def find_session(root: Path, prefix: str) -> tuple[CheckpointStore, str] | str:
    """The project store holding session `prefix` (any project), and its full id."""
    from rawtrio.checkpoints.store import CheckpointStore

    matches: list[tuple[Path, str]] = []
    if root.is_dir():
        for project in root.iterdir():
            folder = project / "changesets"
            if folder.is_dir():
                matches += [
                    (project, s.name) for s in folder.iterdir() if s.name.startswith(prefix)
                ]
    ids = {sid for _p, sid in matches}
    if not ids:
        return f"no checkpoints of a session {prefix!r}"
    if len(ids) > 1:
        return f"session prefix {prefix!r} is ambiguous: {', '.join(sorted(ids))}"
    project, sid = matches[0]
    try:
        info = json.loads((project / "project.json").read_text("utf-8"))
        cwd = Path(str(info["path"]))
    except (OSError, ValueError, KeyError):
        return f"the checkpoint folder {project} is damaged (no project.json)"
    store = CheckpointStore(root, cwd)
    if store.dir != project:
        return f"the project of session {sid} moved from {cwd}; its checkpoints stay put"
    return store, sid
