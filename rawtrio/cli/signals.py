"""SIGINT and SIGTERM for every front end: the process's latch, the one exit-code table, and
the one way a command is stopped by a signal.

The disposition is decided by the entry point (`rawtrio.cli.main.main`) before anything
heavy is imported, and holds until the process ends (`SignalLatch`): the signals never
surface as a `KeyboardInterrupt` traceback or as death by signal. Before a turn exists they
end the run quietly with their exit code (`Interrupted`); while trio runs, a front end
receives them with `trio.open_signal_receiver` and turns them into session operations —
headless cancels the turn, the chats treat Ctrl-C as a key, and commands that own no turn
(`rawtrio sessions`, `rawtrio mcp test`, `rawtrio acp`) are stopped by `stopped_by_signal`.
Whatever a front end does with a signal, it notes it in the latch, so the exit code says
which signal it was (`SIGNAL_EXIT`, docs/contracts.md).

trio is imported inside `stopped_by_signal` only: `rawtrio --help` and usage errors must
not pay for it.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING

from rawtrio.contracts import ExitCode

if TYPE_CHECKING:
    import trio

#: The exit code of a run ended by each signal (docs/contracts.md).
SIGNAL_EXIT = {signal.SIGINT: ExitCode.SIGINT, signal.SIGTERM: ExitCode.SIGTERM}


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived before there was a turn to cancel."""

    def __init__(self, signum: int) -> None:
        self.signum = signal.Signals(signum)
        super().__init__(f"received {self.signum.name}")

    @property
    def exit_code(self) -> int:
        return SIGNAL_EXIT[self.signum]


class SignalLatch:
    """Python-level handlers for SIGINT and SIGTERM that record every signal.

    While `raising()` is active the handler also raises `Interrupted` (blocking reads such
    as a prompt from stdin are then interrupted). Outside it the handler only records, so
    it is safe while trio runs: trio installs its own handlers while a signal receiver is
    open and, when it closes, redelivers pending signals here, where they are noted and
    do nothing else.
    """

    def __init__(self) -> None:
        self.received: list[signal.Signals] = []
        self._raising = False

    def note(self, signum: int) -> signal.Signals:
        """Record a signal a trio signal receiver delivered; return it."""
        sig = signal.Signals(signum)
        self.received.append(sig)
        return sig

    @property
    def exit_code(self) -> int | None:
        """The exit code for the first signal received, or None when none came."""
        return SIGNAL_EXIT[self.received[0]] if self.received else None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.note(signum)
        if self._raising:
            self._raising = False  # one Interrupted; later signals are only noted
            raise Interrupted(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[SignalLatch]:
        previous = {s: signal.signal(s, self._handle) for s in SIGNAL_EXIT}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    @contextlib.contextmanager
    def raising(self) -> Iterator[None]:
        if self.received:  # arrived while nothing would have raised
            raise Interrupted(self.received[0])
        self._raising = True
        try:
            yield
        finally:
            self._raising = False


@contextlib.asynccontextmanager
async def stopped_by_signal(
    latch: SignalLatch, on_signal: Callable[[signal.Signals], object] | None = None
) -> AsyncIterator[trio.Nursery]:
    """Run the block until it ends or SIGINT/SIGTERM arrives, which cancels it (`received
    SIGTERM`) after noting it in `latch` (`latch.exit_code` then says which) and calling
    `on_signal`. The block gets the nursery the signal cancels, for tasks of its own; a
    write under way in a shielded scope still completes."""
    import trio

    with trio.open_signal_receiver(*SIGNAL_EXIT) as signals:
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                async for signum in signals:
                    sig = latch.note(signum)
                    if on_signal is not None:
                        on_signal(sig)
                    nursery.cancel_scope.cancel(reason=f"received {sig.name}")

            nursery.start_soon(watch)
            try:
                yield nursery
            finally:
                nursery.cancel_scope.cancel(reason="done")
