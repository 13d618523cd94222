"""`rawtrio -p`: run the turn in the host of this state directory when one runs, else here.

Decided before anything heavy is imported (docs/contracts.md, "The host and attaching"):
`--no-attach`, `host.attach = "never"` (without `--attach`) or `--demo` run in this process
(`rawtrio.cli.headless`). Otherwise the host's socket (`rawtrio.host.paths`) is tried: no
host there (`ENOENT`, `ECONNREFUSED`) runs here too, unless `host.autostart = true` or
`--attach` was given, which start one (`rawtrio serve --detach`, without the API keys of
this environment) and wait for it to answer. A host of another rawtrio version or
protocol, or one that does not answer the handshake, is left alone: one line on stderr
says so and the turn runs here.

Attached, the host resolves the configuration, AGENTS.md and keys from this process's
working directory and environment (sent with `_rawtrio/session/start`), runs the turn, and
streams its events back; they are rendered by the same `HeadlessOutput` as a local run,
so the output, the stderr lines and the exit code are the same (`stream-json`'s `init` line
from `_rawtrio/session/info`; with `--input-format stream-json` a turn per message on
stdin, which this loop reads between turns, waking for signals too). SIGINT and SIGTERM cancel
the remote turn (`_rawtrio/session/cancel`, reason `received SIGINT`) as they cancel a
local one; further signals are noted and change nothing, and the turn's `turn_ended`
decides the output and the exit code (130, 143 for a cancelled turn). An error the local
run would raise arrives as its message and exit code and is printed as the local run
prints it. A host that goes away before the turn ended leaves `rawtrio: error: the host
(pid N) went away during the turn`, exit 1.

The client is a blocking socket loop (`rawtrio.host.client`) that wakes for the socket
and for signals (`signal.set_wakeup_fd`): no trio, no runtime, no configuration schema.
Finding the host, starting one and the version check are shared with `rawtrio acp`
(`rawtrio.cli.attaching`).
"""

from __future__ import annotations

import argparse
import os
import selectors
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

# Re-exported: the terminal chat takes the decision from here too (`rawtrio.tui.runner`).
from rawtrio.cli.attaching import attach_mode as attach_mode
from rawtrio.cli.attaching import client_env as client_env
from rawtrio.cli.attaching import drain, wake_on_signals
from rawtrio.cli.attaching import find_host as find_host
from rawtrio.cli.attaching import session_flags as session_flags
from rawtrio.cli.attaching import start_host as start_host
from rawtrio.cli.attaching import state_dir as state_dir
from rawtrio.cli.headless_input import UserMessages, read_prompt, say_notice
from rawtrio.cli.signals import Interrupted, SignalLatch
from rawtrio.contracts import ExitCode, TurnOutcome
from rawtrio.errors import UsageError
from rawtrio.unicode_safety import replace_unwritable

if TYPE_CHECKING:
    from rawtrio import events as ev
    from rawtrio.host.client import HostConnection, HostInfo, RemoteError

T = TypeVar("T")


def main(args: argparse.Namespace, latch: SignalLatch) -> int:
    """`rawtrio -p`: attached to a host, or in this process."""
    stream_input = getattr(args, "input_format", None) == "stream-json"
    try:
        with latch.raising():
            prompt = None if stream_input else read_prompt(args)
    except Interrupted as exc:
        return exc.exit_code
    except UsageError as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    replace_unwritable(sys.stdout)
    attach, autostart = attach_mode(args)
    found = find_host(args, autostart=autostart, say=say_notice) if attach else None
    if found is None:
        try:
            with latch.raising():
                from rawtrio.cli.headless import run_here
        except Interrupted as exc:
            return exc.exit_code
        return run_here(prompt, args, latch)
    conn, info = found
    fmt = args.output_format or "text"
    # `text` and `events` are written from the events' JSON (`rawtrio.cli.event_lines`);
    # Claude Code's formats render the event classes, loaded meanwhile.
    renderer = None if fmt in JSON_LINES else RendererImport.start()
    with conn:
        if latch.received:  # before anything was asked of the host: no turn yet
            return latch.exit_code or ExitCode.SIGINT
        run = AttachedRun(conn, info, latch, fmt, renderer)
        return run.run(prompt, args)


#: The output formats written straight from the events' JSON objects.
JSON_LINES: Final = ("text", "events")


class RendererImport:
    """The modules that render `json` and `stream-json` — the event classes, the transcript
    view, the event codec: ~100 ms of building frozen dataclasses, more than the host takes
    to start the session — imported in a thread while this one talks to the host (it waits
    in `select`, without the GIL). `wait` returns once they are loaded (raising what the
    import raised). Nothing this thread imports is imported by the other before `wait`."""

    MODULES: Final = (
        "rawtrio.cli.headless_output",
        "rawtrio.cli.claude_output",
        "rawtrio.store.codec",
    )

    def __init__(self) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._load, name="rawtrio-renderer", daemon=True)

    @classmethod
    def start(cls) -> RendererImport:
        loading = cls()
        loading._thread.start()
        return loading

    def _load(self) -> None:
        import importlib

        try:
            for name in self.MODULES:
                importlib.import_module(name)
        except BaseException as exc:  # re-raised in the main thread by `wait`
            self._error = exc

    def wait(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


class Totals(NamedTuple):
    """The host's `_rawtrio/session/usage` answer."""

    cost_usd: float | None
    context_tokens: int
    context_window: int | None

    @classmethod
    def from_json(cls, data: Any) -> Totals:
        data = data if isinstance(data, dict) else {}
        cost, tokens, window = (
            data.get("cost_usd"),
            data.get("context_tokens"),
            data.get("context_window"),
        )
        return cls(
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            context_tokens=tokens if isinstance(tokens, int) else 0,
            context_window=window if isinstance(window, int) else None,
        )


class AttachedRun:
    """One `rawtrio -p` turn run by a host: start, submit, render until `turn_ended`."""

    def __init__(
        self,
        conn: HostConnection,
        info: HostInfo,
        latch: SignalLatch,
        fmt: str,
        renderer: RendererImport | None,
    ) -> None:
        self._conn = conn
        self._info = info
        self._latch = latch
        self._fmt = fmt
        self._renderer = renderer
        self._signals_seen = 0
        self._turn_started = False
        #: How the last turn ended (`--input-format stream-json` goes on unless cancelled).
        self._last_outcome: TurnOutcome | None = None

    @property
    def _host(self) -> str:
        return f"the host (pid {self._info.pid})" if self._info.pid else "the host"

    def run(self, prompt: str | None, args: argparse.Namespace) -> int:
        # Loaded by `find_host` already (a run here never reaches this module's client part).
        from rawtrio.host.client import HostGone, ProtocolFault, RemoteError

        with wake_on_signals() as wake_fd:
            try:
                return self._run(prompt, args, wake_fd)
            except RemoteError as exc:
                return self._refused(exc)
            except UsageError as exc:  # a bad line of `--input-format stream-json`
                print(f"rawtrio: {exc}", file=sys.stderr)
                return ExitCode.USAGE
            except HostGone:
                when = "during the turn" if self._turn_started else "before the turn started"
                print(f"rawtrio: error: {self._host} went away {when}", file=sys.stderr)
                return ExitCode.ERROR
            except ProtocolFault as exc:
                print(f"rawtrio: error: {self._host} broke the protocol: {exc}", file=sys.stderr)
                return ExitCode.ERROR

    def _run(self, prompt: str | None, args: argparse.Namespace, wake_fd: int) -> int:
        conn = self._conn
        started = conn.request(
            "_rawtrio/session/start",
            {
                "cwd": str(Path(args.cwd or os.getcwd()).resolve()),
                "env": client_env(),
                "flags": session_flags(args),
                "choice": {
                    "continue": bool(args.continue_),
                    "resume": args.resume,
                    "fork": bool(args.fork),
                    # --cwd given: it must agree with a resumed session's directory.
                    "explicit_cwd": args.cwd is not None,
                },
                "headless": True,
            },
        )
        while conn.next_message() is not None:
            pass  # events before the join point: a local run subscribes after the start too
        notices = started.get("notices") if isinstance(started, dict) else None
        for notice in notices or ():
            say_notice(str(notice))
        session_id = _field(started, "sessionId", "_rawtrio/session/start")
        # stream-json's `system`/`init` line, from what the host says of the session.
        init: Any = None
        if self._fmt == "stream-json":
            info = conn.request("_rawtrio/session/info", {"sessionId": session_id})
            agent = started.get("agent") if isinstance(started, dict) else None
            init = (info, agent if isinstance(agent, str) else None)
        if prompt is not None:
            return self._turn(prompt, session_id, wake_fd, init)
        messages = UserMessages.stdin()
        code = int(ExitCode.COMPLETED)
        while True:
            prompt = self._next_prompt(messages, wake_fd)
            if self._latch.received:  # while waiting for a message: no turn runs
                return self._latch.exit_code or ExitCode.SIGINT
            if prompt is None:
                return code
            code = self._turn(prompt, session_id, wake_fd, init)
            init = None
            # A cancelled turn ends the run with its code, as a local run does; a signal
            # that came after the turn ended is the next wait's (130, 143).
            if self._last_outcome is TurnOutcome.CANCELLED:
                return code

    def _next_prompt(self, messages: UserMessages, wake_fd: int) -> str | None:
        """`--input-format stream-json`: the next message's prompt; None at the end of
        the input or on a signal (noted in the latch)."""
        with selectors.DefaultSelector() as selector:
            selector.register(messages.fd, selectors.EVENT_READ, "input")
            selector.register(wake_fd, selectors.EVENT_READ, "signal")
            while (taken := messages.take()) is ...:
                # Looked at before each wait: a signal whose wake-up byte was drained before
                # its Python handler ran (or one the last turn's loop took) still ends it.
                if self._latch.received:
                    return None
                for key, _ in selector.select():
                    if key.data == "signal":
                        drain(wake_fd)
                    else:
                        messages.feed()
            return taken

    def _turn(self, prompt: str, session_id: str, wake_fd: int, init: Any) -> int:
        """One turn: submit, render until its end, the result; its exit code."""
        conn = self._conn
        submitted = conn.request(
            "_rawtrio/session/submit", {"sessionId": session_id, "text": prompt}
        )
        self._turn_started = True
        turn_id = _field(submitted, "turnId", "_rawtrio/session/submit")
        if self._renderer is None:
            return self._turn_lines(session_id, turn_id, wake_fd)
        self._renderer.wait()  # loaded while the host started the session
        from rawtrio.cli.claude_output import SessionFacts
        from rawtrio.cli.headless_output import HeadlessOutput, report
        from rawtrio.store.codec import event_from_json  # loaded by `RendererImport`

        output = HeadlessOutput(self._fmt, sys.stdout, session_id, turn_id)
        if init is not None:
            output.start(SessionFacts.from_info(*init))

        def render(data: dict[str, Any]) -> ev.TurnEnded | None:
            try:
                event = event_from_json(data)
            except (TypeError, ValueError) as exc:
                raise _undecodable(exc) from None
            return None if event is None else output.render(event)

        ended = self._follow(render, session_id, wake_fd)
        totals = None
        if output.needs_totals:
            usage = conn.request("_rawtrio/session/usage", {"sessionId": session_id})
            totals = Totals.from_json(usage)
        output.finish(ended, totals)
        self._last_outcome = ended.outcome
        return report(ended, self._latch)

    def _turn_lines(self, session_id: str, turn_id: str, wake_fd: int) -> int:
        """`text` and `events`: written from the events' JSON, no event class built."""
        from rawtrio.cli.event_lines import AttachedLines, BadEvent, outcome_exit

        output = AttachedLines(self._fmt, sys.stdout, turn_id)

        def render(data: dict[str, Any]) -> tuple[TurnOutcome, str] | None:
            try:
                return output.render(data)
            except BadEvent as exc:
                raise _undecodable(exc) from None

        outcome, reason = self._follow(render, session_id, wake_fd)
        output.finish()
        self._last_outcome = outcome
        return outcome_exit(outcome, reason, self._latch)

    def _follow(
        self, render: Callable[[dict[str, Any]], T | None], session_id: str, wake_fd: int
    ) -> T:
        """Render the session's events until the turn's end (what `render` returns for
        it), cancelling the turn on the first signal (one that came while the session
        started included)."""
        with selectors.DefaultSelector() as selector:
            selector.register(self._conn.fileno(), selectors.EVENT_READ, "host")
            selector.register(wake_fd, selectors.EVENT_READ, "signal")
            while True:
                self._cancel_on_signal(session_id)
                message = self._conn.next_message()
                if message is None:
                    for key, _ in selector.select():
                        if key.data == "signal":
                            drain(wake_fd)
                        else:
                            self._conn.receive_available()
                    continue
                data = _event_of(message, session_id)
                if data is not None and (ended := render(data)) is not None:
                    return ended

    def _cancel_on_signal(self, session_id: str) -> None:
        received = self._latch.received
        if len(received) > self._signals_seen:
            if self._signals_seen == 0:  # the first cancels; later ones change nothing
                reason = f"received {received[0].name}"
                self._conn.notify(
                    "_rawtrio/session/cancel", {"sessionId": session_id, "reason": reason}
                )
            self._signals_seen = len(received)

    def _refused(self, exc: RemoteError) -> int:
        """An error answer, printed as a local run prints the same error."""
        from rawtrio.host.client import TURN_IN_PROGRESS

        code = exc.exit_code
        if code is not None:
            print(f"rawtrio: {exc.message}", file=sys.stderr)
            return code
        if exc.code == TURN_IN_PROGRESS:  # the session runs a turn in another front end
            print(f"rawtrio: {exc.message}", file=sys.stderr)
            return ExitCode.SESSION_LOCKED
        print(f"rawtrio: error: {self._host} refused {exc}", file=sys.stderr)
        return ExitCode.ERROR


def _field(result: Any, name: str, method: str) -> str:
    from rawtrio.host.client import ProtocolFault

    value = result.get(name) if isinstance(result, dict) else None
    if not isinstance(value, str):
        raise ProtocolFault(f"{method}: the answer has no {name}")
    return value


def _event_of(message: dict[str, Any], session_id: str) -> dict[str, Any] | None:
    """The event object a `_rawtrio/event` notification of this session carries, else
    None."""
    if message.get("method") != "_rawtrio/event":
        return None
    params = message.get("params")
    if not isinstance(params, dict) or params.get("sessionId") != session_id:
        return None
    data = params.get("event")
    return data if isinstance(data, dict) else None


def _undecodable(exc: Exception) -> Exception:
    from rawtrio.host.client import ProtocolFault

    return ProtocolFault(f"an event that does not decode: {exc}")
