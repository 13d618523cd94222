"""Start and stop the chat: the runtime, the screen, signals, and the way out.

`rawtrio.tui.start` has drawn the first frame by the time this module is imported
(`rawtrio.tui.first_frame`); `run_app` takes the terminal over from it, with the keys typed
at it.

urwid runs on its trio event loop inside the same `trio.run` as the runtime
(`with loop.start(): await event_loop.run_async()`). Inside `loop.start()` the terminal's
interrupt character is switched off (`tty_signal_keys(intr="undefined")`), so Ctrl-C
arrives as the key `ctrl c`; a SIGINT sent by `kill` is received by a signal task and
does the same. Leaving `loop.start()` restores the terminal — on every path, an
unexpected error included — and only then is the session closed (its turn recorded, its
processes reaped) and the error, if any, written to `tui.log` in the state directory.
Python logging goes to that file while the chat runs, so nothing writes over the screen.

Exception-group policy: the runtime comes up in a boot task (`_boot`), where a
`RawtrioError` (bad configuration, unknown or locked session) becomes a message and its
exit code. Anything else — a bug in a key handler, an event handler or the boot — ends the
app's nursery with an `ExceptionGroup`, which is not unwrapped: `run` catches it as an
`Exception` once the terminal is restored, logs the traceback and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import termios
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio
import urwid

from rawtrio.contracts import ExitCode
from rawtrio.errors import NoCredentials, RawtrioError, exit_code_for
from rawtrio.store.paths import state_dir
from rawtrio.tui.first_frame import BANNER, UNKNOWN_AGENT, FirstFrame
from rawtrio.tui.host import ChatOptions, ChatRuntime, ChatSetup
from rawtrio.tui.layout import PALETTE, Layout

if TYPE_CHECKING:
    from rawtrio.host.client import HostConnection, HostInfo
    from rawtrio.tui.app import ChatApp

LOG_NAME = "tui.log"
HISTORY_NAME = "tui_history.jsonl"
#: Brings the runtime up while the chat is already on screen (see `run_app`).
Boot = Callable[["ChatApp"], Awaitable[None]]


@dataclass
class AppResult:
    exit_code: int
    next_action: str | None = None
    #: The session the chat was in, if it was kept (to say how to come back to it).
    session_id: str | None = None
    error: RawtrioError | None = None


async def run(
    args: argparse.Namespace,
    found: tuple[HostConnection, HostInfo] | None = None,
    frame: FirstFrame | None = None,
) -> int:
    """The chat, attached to the host `found` (`rawtrio.tui.start.find_host`) or running
    here, taking the terminal over from `frame` when it was drawn."""
    log_path = state_dir() / LOG_NAME
    with _logging_to(log_path):
        demo = bool(getattr(args, "demo", False))
        while True:
            try:
                boot: Boot
                if demo:
                    boot = _demo_boot
                elif found is not None:
                    boot, found = _attached_boot(args, *found), None
                else:
                    boot = _chat_boot(args)
                result = await run_app(
                    boot, history=None if demo else state_dir() / HISTORY_NAME, frame=frame
                )
                frame = None  # the demo started from the chat draws its own
            except Exception:  # a bug: the terminal is restored by now; keep the details
                logging.getLogger("rawtrio.tui").exception("the chat failed")
                print(
                    f"rawtrio: the chat stopped on an unexpected error; details in {log_path}",
                    file=sys.stderr,
                )
                return ExitCode.ERROR
            if result.error is not None:
                print(f"rawtrio: {result.error}", file=sys.stderr)
                return exit_code_for(result.error)
            if result.session_id is not None:
                print(
                    f"session {result.session_id} — resume it with: "
                    f"rawtrio --resume {result.session_id}"
                )
            if result.next_action == "demo":
                demo = True
                continue
            return result.exit_code


class _logging_to:
    """Route Python logging (through `rawtrio.logs`, so redacted) and warnings to a file
    while the screen is ours; logging stays there afterwards (the chat owned stderr)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        from rawtrio.logs import log_to_file

        with contextlib.suppress(OSError):  # an unwritable state dir: keep stderr logging
            log_to_file(self.path)
        logging.captureWarnings(True)

    def __exit__(self, *exc: object) -> None:
        logging.captureWarnings(False)


def guide(problem: str) -> list[Any]:
    return [
        ("md h", "Welcome to rawtrio — no model is configured yet."),
        ("dim", f"({problem})"),
        "",
        ("guide", "To talk to a model, do one of these and start rawtrio again:"),
        "  • Anthropic:  export ANTHROPIC_API_KEY=sk-ant-…",
        "  • OpenAI:     export OPENAI_API_KEY=sk-…   and run  "
        "rawtrio --provider openai-responses --model gpt-4.1",
        "  • A local OpenAI-compatible server (Ollama, llama.cpp, vLLM):",
        "      OPENAI_API_KEY=local rawtrio --provider openai-chat "
        "--base-url http://localhost:11434/v1 --model llama3.2",
        "  • Or write a config file:  rawtrio config init   (docs/configuration.md)",
        "",
        ("guide", "Or see it work offline: press Enter to run /demo (also: rawtrio --demo)."),
        ("dim", "/help lists the commands; /quit or Ctrl-C twice leaves."),
        "",
    ]


def _chat_boot(args: argparse.Namespace) -> Boot:
    """Configuration, the store and the runtime, then the session `--continue` /
    `--resume` / `--fork` name (or a new one)."""

    async def boot(app: ChatApp) -> None:
        # The runtime's modules (config, store, tools) load in a worker thread: the screen
        # is drawn and takes keys meanwhile.
        await trio.to_thread.run_sync(_import_runtime)
        from rawtrio.app import Choice, open_app

        if not await _ask_trust(app, args, await _resumed_directory(args)):
            return
        choice = Choice.from_args(args)
        async with contextlib.AsyncExitStack() as stack:
            try:
                opened = await stack.enter_async_context(open_app(args))
            except NoCredentials as exc:
                app.show_guide(guide(str(exc)), ["/demo"])
                return

            # `open_app` resolved a session resumed from elsewhere in its own directory:
            # new sessions still start where rawtrio was launched (docs/tui.md, `/new`).
            launch_dir = Path(await trio.Path(args.cwd or os.getcwd()).resolve())
            _configure(app, opened)

            async def options_for_cwd(cwd: Path) -> tuple[Any, tuple[str, ...]]:
                found = await opened.options_for(cwd=cwd, agent=app.agent)
                return found.options, found.notices

            async def options_for_agent(name: str) -> tuple[Any, str]:
                # `/agent` starts its session where rawtrio was launched: the agent is
                # looked up in that project's configuration, not a resumed session's.
                found = await opened.options_for(cwd=launch_dir, agent=name)
                return found.options, found.agent

            app.setup.options_for_cwd = options_for_cwd
            app.setup.options_for_agent = options_for_agent
            app.setup.launch_dir = launch_dir
            told = set(opened.notices)
            session = await opened.start_session(choice)
            await app.attach(session, created=choice.new, show_history=not choice.new)
            for notice in opened.notices:  # a session resumed from elsewhere: its project's
                if notice not in told:
                    app.transcript.note(f"rawtrio: {notice}", "warning")
            await app.closed.wait()

    return boot


async def _resumed_directory(args: argparse.Namespace) -> Path | None:
    """The stored directory of the session `--resume ID` names, unless `--cwd` is given:
    the session works there, under that project's configuration (`rawtrio.app.choice`; a
    host resolves it the same way), so its files are the ones the trust prompt asks about,
    attached or not. One read of the store's file (`stored_directory`), before any runtime
    or host session is opened; None: the run's directory (opening the session then says
    what is wrong with the id)."""
    if not args.resume or args.cwd:
        return None
    from rawtrio.app.choice import stored_directory

    return await stored_directory(args.resume)


async def _ask_trust(app: ChatApp, args: argparse.Namespace, where: Path | None = None) -> bool:
    """Before the session is opened: when the project (`where`, else the run's directory)
    has files that wait for trust, ask
    (`rawtrio.tui.trust_prompt`); "trust" records them in the trust store, which the
    session's configuration (here, or on the host this chat is attached to: it reads the
    same store) then finds trusted. False: the user chose to quit."""
    if getattr(args, "trust", False):
        return True  # --trust: approved on the command line
    from rawtrio.tui.trust import trust_files, untrusted_files

    cwd = where or Path(args.cwd or os.getcwd())
    env = dict(os.environ)
    config = getattr(args, "config", None)
    files = await trio.to_thread.run_sync(untrusted_files, cwd, env, config)
    if not files:
        return True
    answer = await app.ask_trust(files)
    if answer == "quit":
        app.request_exit()
        return False
    if answer == "trust":
        await trio.to_thread.run_sync(trust_files, files, env)
    return True


class _Opened(Protocol):
    """What the chat is configured from: an open application, here or on a host."""

    @property
    def runtime(self) -> ChatRuntime: ...
    @property
    def options(self) -> ChatOptions: ...
    @property
    def agent(self) -> str: ...
    @property
    def notices(self) -> tuple[str, ...]: ...

    async def options_for(self, *, agent: str) -> Any: ...


def _configure(app: ChatApp, opened: _Opened) -> None:
    """The runtime is up: the chat may open sessions, and `/agent` gets other options."""

    async def options_for_agent(name: str) -> tuple[Any, str]:
        found = await opened.options_for(agent=name)
        return found.options, found.agent

    app.configure(
        opened.runtime,
        opened.options,
        opened.agent,
        banner=[("warning", f"rawtrio: {n}") for n in opened.notices],
        options_for_agent=options_for_agent,
    )


def _attached_boot(args: argparse.Namespace, conn: HostConnection, info: HostInfo) -> Boot:
    """The chat on a session of the host `conn` is attached to (`rawtrio.host.remote`):
    the same chat, the same session operations, run by the host."""

    async def boot(app: ChatApp) -> None:
        await trio.to_thread.run_sync(_import_remote)
        from rawtrio.app.choice import Choice
        from rawtrio.cli.attaching import client_env, session_flags
        from rawtrio.host.remote import HostGone, RemoteOptions, open_remote_app

        options = RemoteOptions(
            cwd=Path(await trio.Path(args.cwd or os.getcwd()).resolve()),
            env=client_env(),
            flags=session_flags(args),
            explicit_cwd=args.cwd is not None,
        )
        if not await _ask_trust(app, args, await _resumed_directory(args)):
            return
        choice = Choice.from_args(args)
        with conn:
            async with open_remote_app(conn.fileno(), options, pid=info.pid) as remote:
                conn.close()  # the remote app has its own copy of the socket
                try:
                    session = await remote.start_session(choice)
                except NoCredentials as exc:
                    app.show_guide(guide(str(exc)), ["/demo"])
                    return

                _configure(app, remote)
                await app.attach(session, created=choice.new, show_history=not choice.new)
                await _until_either(app.closed, remote.client.gone)
                if not app.closed.is_set():
                    raise HostGone(f"{remote.client.host} went away")

    return boot


async def _until_either(a: trio.Event, b: trio.Event) -> None:
    async with trio.open_nursery() as nursery:
        for event in (a, b):

            async def wait(event: trio.Event = event) -> None:
                await event.wait()
                nursery.cancel_scope.cancel(reason="one of them happened")

            nursery.start_soon(wait)


def _import_remote() -> None:
    import rawtrio.host.remote
    import rawtrio.tui.commands  # noqa: F401


def _import_runtime() -> None:
    import rawtrio.app
    import rawtrio.tui.commands  # noqa: F401


async def _demo_boot(app: ChatApp) -> None:
    """The demo: the fake model server, a scratch project and a store of its own."""
    await trio.to_thread.run_sync(_import_runtime)
    from rawtrio.app import open_app
    from rawtrio.app.demo import PROMPTS

    app.resumable = False  # the demo's sessions go away with its directory
    async with open_app(demo=True) as demo:
        banner: list[Any] = [
            ("md h", "rawtrio demo — offline, against the built-in fake model"),
            ("dim", f"working in a scratch directory: {demo.options.cwd}"),
            ("guide", "Each suggested prompt is pre-filled: press Enter to send it."),
        ]
        banner += [f"  {n}. {p!r} — {shows}" for n, (p, shows) in enumerate(PROMPTS, 1)]
        banner.append(("dim", "Ctrl-C twice leaves the demo; nothing it did is kept."))
        app.configure(
            demo.runtime, demo.options, demo.agent, banner=banner, script=[p for p, _ in PROMPTS]
        )
        session = await demo.runtime.create_session(demo.options)
        await app.attach(session, created=False, show_history=False)
        await app.closed.wait()


async def run_app(
    boot: Boot, *, history: Path | None, frame: FirstFrame | None = None
) -> AppResult:
    """Show the chat at once, bring the runtime up behind it (`boot`), and run until the
    user leaves; then close the session and let `boot` close the runtime. `frame`: the
    first frame already on screen (`rawtrio.tui.first_frame`), whose typed keys the app
    gets first."""
    screen = urwid.raw_display.Screen(bracketed_paste_mode=True)
    event_loop = urwid.TrioEventLoop()
    banner: list[Any] = [("dim", BANNER)]
    async with trio.open_nursery() as nursery:
        setup = ChatSetup(runtime=None, options=None, agent=UNKNOWN_AGENT, history_path=history)
        layout = Layout(history, banner=banner, agent=setup.agent)
        keys = _KeysTo()
        loop = urwid.MainLoop(
            layout.frame,
            palette=PALETTE,
            screen=screen,
            event_loop=event_loop,
            input_filter=keys,
            handle_mouse=False,
        )
        booted = trio.Event()
        boot_scope = trio.CancelScope()
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            # Read before urwid's screen starts, which discards the terminal's pending input.
            typed = frame.hand_over() if frame is not None else b""
            with loop.start():
                screen.tty_signal_keys(intr="undefined")
                _enter_apart_from_ctrl_j()
                # The first frame now, drawn from the layout alone: the app's modules
                # (events, the transcript view, the blocks) and the boot's worker thread
                # (which would hold the GIL meanwhile) come after it (docs/benchmarks.md,
                # start → prompt). Keys typed meanwhile wait in the terminal: the loop
                # reads them once it runs, and hands them to the app. The app takes the
                # layout's widgets over, so the loop's own first redraw finds nothing
                # changed.
                loop.draw_screen()
                from rawtrio.tui.app import ChatApp

                app = ChatApp(setup, nursery, layout)
                app.loop, app.screen = loop, screen
                keys.app = app
                if typed:  # typed at the first frame, before urwid read the terminal
                    decoded, raw = screen.parse_input(None, None, list(typed), False)
                    loop.process_input(keys(decoded, raw))
                nursery.start_soon(_on_signals, app, signals)
                nursery.start_soon(_ticker, app)
                nursery.start_soon(_boot, app, boot, boot_scope, booted)
                async with trio.open_nursery() as ui:
                    ui.start_soon(event_loop.run_async)
                    await app.exit_requested.wait()
                    ui.cancel_scope.cancel(reason="leaving the chat")
            # The terminal is the user's again from here on.
            session = app.session
            if session is None:
                boot_scope.cancel(reason="left before the session was open")
            await app.leave_session()
            app.closed.set()
            await booted.wait()
        nursery.cancel_scope.cancel(reason="the chat is closed")
    result = AppResult(app.exit_code, app.next_action, error=app.startup_error)
    if session is not None and app.resumable and session.id not in app.deleted:
        result.session_id = session.id
    return result


class _KeysTo:
    """The loop's input filter: the app's (`ChatApp.on_keys`), once the app exists. The
    loop reads no key before that (it runs only afterwards)."""

    app: ChatApp | None = None

    def __call__(self, keys: list[Any], raw: list[int]) -> list[Any]:
        if self.app is None:
            raise RuntimeError("keys read before the chat app was made")
        return self.app.on_keys(keys, raw)


async def _boot(app: ChatApp, boot: Boot, scope: trio.CancelScope, booted: trio.Event) -> None:
    try:
        with scope:
            await boot(app)
    except RawtrioError as exc:  # bad config, unknown or locked session, …: leave, say why
        app.startup_error = exc
        app.request_exit(exit_code_for(exc))
    finally:
        booted.set()


def _enter_apart_from_ctrl_j() -> None:
    """Stop the terminal turning Enter (CR) into Ctrl-J (LF), so Ctrl-J can mean "newline".
    The screen restores the terminal's settings, this one included, when it stops."""
    try:
        fd = sys.stdin.fileno()
        mode = termios.tcgetattr(fd)
        mode[0] &= ~termios.ICRNL
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except (OSError, ValueError, termios.error):
        pass  # not a terminal we can set: Enter and Ctrl-J then both send


async def _on_signals(app: ChatApp, signals: Any) -> None:
    async for signum in signals:
        if signum == signal.SIGINT:
            app.ctrl_c()
        else:
            app.cancel_turn("received SIGTERM")
            app.request_exit(ExitCode.SIGTERM)


async def _ticker(app: ChatApp) -> None:
    """Animate running tool calls and the elapsed time; asleep while nothing runs."""
    from rawtrio.tui.app import TICK_S  # loaded with the app by now

    while True:
        if not app.busy and not app.compacting:
            app.activity = trio.Event()
            await app.activity.wait()
        await trio.sleep(TICK_S)
        app.tick()
