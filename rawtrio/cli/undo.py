"""`rawtrio undo` and `rawtrio redo`: put back (or re-apply) the files a turn changed.

Without `--session`, the project's last checkpoint (of any session run in this directory)
is the one undone; `--turn N` names checkpoint N of the session (`rawtrio undo --list`,
`rawtrio sessions show`). A file changed outside rawtrio since the turn is a conflict:
nothing is written, the files are listed, and the exit code is `EXIT_CONFLICT` (6) unless
`--force` (docs/checkpoints.md). The change set's session is held (its writer lease) while
its files are put back: a session open in another process (a chat, a headless run) is
refused with exit code 5, naming the holder — undo there, or close it first. A session live
in this state directory's host (`rawtrio serve`, of this version) is undone by the host
(`_rawtrio/undo`, `_rawtrio/redo`), with the output and exit code of a local run; a host
that answers the session is no longer live in it (it closed between the host's status and
the request: -32002 with `data.reason` "not_live") has let it go, and it is undone here
(`through_holder`, which `rawtrio rewind` shares).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from rawtrio.contracts import ExitCode
from rawtrio.errors import RawtrioError, SessionLocked

if TYPE_CHECKING:
    from rawtrio.checkpoints.model import ChangeSet
    from rawtrio.checkpoints.restore import Outcome
    from rawtrio.checkpoints.store import CheckpointStore
    from rawtrio.host.client import HostConnection, RemoteError

#: Undo or redo refused because files changed outside rawtrio since the turn.
EXIT_CONFLICT: Final = 6
#: How many times `through_holder` runs the operation here: again after a host let the
#: session go, but not forever for a session that keeps being opened and closed there.
LOCAL_TRIES: Final = 3


class HostLetGo(Exception):
    """The host answered that the session is not live in it (any more): it closed after the
    host's status listed it, giving its lease back, so the operation can run here."""


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

    def here() -> int:
        outcome = trio.run(_restore, store, session_id, args, action)
        text = outcome.describe(action)
        if not outcome.applied:
            print(text, file=sys.stderr)
            return EXIT_CONFLICT
        print(text)
        return ExitCode.COMPLETED

    def in_host(host: HostConnection, exc: SessionLocked) -> int:
        return _restore_in_host(host, exc, args, action)

    try:
        return through_holder(here, in_host, action)
    except CheckpointError as exc:
        print(f"rawtrio {action}: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    except RawtrioError as exc:
        from rawtrio.cli.sessions import fail

        return fail(exc)
    except OSError as exc:
        print(f"rawtrio {action}: {exc}", file=sys.stderr)
        return ExitCode.ERROR


def through_holder(
    here: Callable[[], int], in_host: Callable[[HostConnection, SessionLocked], int], action: str
) -> int:
    """Run `here` (which takes the session's writer lease); when another process holds the
    session and it is this state directory's host with the session live (`host_holding`),
    `in_host` asks the host instead. A host that answers the session is not live any more
    (`HostLetGo`: it closed in between, its lease given back) is not a holder: `here` runs
    again, at most `LOCAL_TRIES` times in all. Any other holder: the refusal, exit 5."""
    tries = LOCAL_TRIES
    while True:
        tries -= 1
        try:
            return here()
        except SessionLocked as exc:
            host = host_holding(exc)
            if host is not None:
                try:
                    with host:
                        return in_host(host, exc)
                except HostLetGo:
                    if tries:
                        continue  # the session is free now: here again
                    print(
                        f"rawtrio {action}: session {exc.session_id} kept being taken and "
                        f"let go by another process meanwhile; try again",
                        file=sys.stderr,
                    )
                    return ExitCode.SESSION_LOCKED
            print(f"rawtrio {action}: {locked_text(exc, action)}", file=sys.stderr)
            return ExitCode.SESSION_LOCKED


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


def _restore_in_host(
    host: HostConnection, exc: SessionLocked, args: argparse.Namespace, action: str
) -> int:
    """Undo or redo in the host that has the session live, as a local run would say it."""
    from rawtrio.host.client import RAWTRIO_ERROR, RemoteError

    params: dict[str, object] = {"sessionId": exc.session_id, "force": args.force}
    if args.turn is not None:
        params["turn"] = args.turn
    answer = ask_host(host, f"_rawtrio/{action}", params, exc, action)
    if isinstance(answer, int):
        return answer
    if isinstance(answer, RemoteError):
        if answer.code == RAWTRIO_ERROR and _kind(answer) == "UsageError":
            # The host's `CheckpointError` (nothing to undo, content gone): a local run's
            # message and exit code for it.
            print(f"rawtrio {action}: {answer.message}", file=sys.stderr)
            return ExitCode.ERROR
        return host_refused(answer, action)
    text = str(answer.get("text", ""))
    if answer.get("applied") is not True:
        print(text, file=sys.stderr)
        return EXIT_CONFLICT
    print(text)
    return ExitCode.COMPLETED


def host_holding(exc: SessionLocked) -> HostConnection | None:
    """A connection to this state directory's host when the holder of `exc`'s session is
    that host, of this version, with the session live in it: the host is asked to do the
    operation. None otherwise (another process holds it, a host of another version, the
    session not live there): the refusal stands."""
    from rawtrio.cli.attaching import HANDSHAKE_TIMEOUT_S, find_host
    from rawtrio.host.client import HostGone, ProtocolFault, RemoteError

    if exc.pid is None:
        return None
    found = find_host(argparse.Namespace(), autostart=False, say=lambda _notice: None)
    if found is None:
        return None
    conn, info = found
    try:
        if info.pid == exc.pid:
            status = conn.request("_rawtrio/host/status", {}, timeout=HANDSHAKE_TIMEOUT_S)
            live = status.get("sessions", []) if isinstance(status, dict) else []
            if any(isinstance(s, dict) and s.get("id") == exc.session_id for s in live):
                return conn
    except (HostGone, ProtocolFault, RemoteError, TimeoutError):
        pass  # not a host to ask: the refusal stands
    conn.close()
    return None


def ask_host(
    host: HostConnection,
    method: str,
    params: dict[str, object],
    exc: SessionLocked,
    action: str,
) -> dict[str, object] | RemoteError | int:
    """The host's answer to `method`, its error, or (having said why) the exit code when
    the host went away or broke the protocol before answering."""
    from rawtrio.host.client import HostGone, ProtocolFault, RemoteError

    try:
        answer = host.request(method, params)
    except RemoteError as error:
        return error
    except (HostGone, ProtocolFault) as error:
        print(
            f"rawtrio {action}: the host (pid {exc.pid}) did not answer ({error}); "
            f"see what was done with `rawtrio {action} --list`",
            file=sys.stderr,
        )
        return ExitCode.ERROR
    if not isinstance(answer, dict):
        print(f"rawtrio {action}: the host answered {answer!r}", file=sys.stderr)
        return ExitCode.ERROR
    return answer


def host_refused(error: RemoteError, action: str) -> int:
    """A host's refusal, said as a local run says its errors: a turn running there is a
    lease conflict (exit 5), an error a local run would raise exits with its code. Raises
    `HostLetGo` when the session is not live in the host any more (`through_holder` then
    runs the operation here)."""
    from rawtrio.host.client import TURN_IN_PROGRESS

    if error.not_live:
        raise HostLetGo(error.message)
    if error.code == TURN_IN_PROGRESS:
        print(f"rawtrio {action}: {error.message}", file=sys.stderr)
        return ExitCode.SESSION_LOCKED
    if error.exit_code is not None:
        print(f"rawtrio: {error.message}", file=sys.stderr)
        return error.exit_code
    print(f"rawtrio {action}: the host refused: {error}", file=sys.stderr)
    return ExitCode.ERROR


def _kind(error: RemoteError) -> object:
    return error.data.get("kind") if isinstance(error.data, dict) else None


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
