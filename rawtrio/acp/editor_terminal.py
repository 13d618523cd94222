"""Commands run in the editor: a `ProcessBackend` over the client's `terminal/*` methods.

When a client attached to the session advertises `terminal: true`, `bash` (foreground
commands) runs through `terminal/create` in the editor, which shows the live terminal
(the tool call carries `{"type": "terminal", "terminalId"}` content). rawtrio follows the
output with `terminal/output`, waits with `terminal/wait_for_exit`, and always ends with
`terminal/release` — shielded and bounded, whatever happened, so every terminal is
released. On timeout or cancellation the command is stopped with `terminal/kill` first;
the result says so (I5: started, how long, stopped how, partial output).

Only the environment variables that differ from the session's base environment
(`SessionOptions.env`, else rawtrio's own) are sent, never one of the stripped secrets
(plus the `RAWTRIO_SESSION` / `RAWTRIO_CALL` markers), since the client adds them to its
own environment.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio.acp.jsonrpc import ConnectionLost, Peer, RpcError
from rawtrio.contracts import CLEANUP_DEADLINE_S
from rawtrio.groups import collapse_group
from rawtrio.processes import (
    CALL_ENV_VAR,
    SESSION_ENV_VAR,
    EndedBy,
    ProcessResult,
    ProcessWatch,
    is_stripped,
)

#: How often live output is fetched while a command runs.
POLL_S: Final = 0.2


async def ask_editor(peer: Peer, session_id: str, method: str, params: dict[str, Any]) -> Any:
    """A client method for `session_id`; refusals and a lost connection are `OSError`s,
    which the tools report like any failed file or process operation."""
    try:
        return await peer.request(method, {"sessionId": session_id, **params})
    except RpcError as exc:
        raise OSError(f"the editor refused {method}: {exc.message}") from None
    except ConnectionLost as exc:
        raise OSError(f"the editor connection closed during {method}: {exc}") from None


class EditorTerminal:
    def __init__(
        self,
        peer: Peer,
        session_id: str,
        on_terminal: Callable[[str], None] | None = None,
        *,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self.peer = peer
        self.session_id = session_id
        self._on_terminal = on_terminal
        #: What the command's environment is compared with (None: this process's).
        self._base_env = base_env

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        return await ask_editor(self.peer, self.session_id, method, params)

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        session_id: str,
        output_cap: int,
        grace_s: float,
        timeout_s: float | None,
        on_output: Callable[[str], None] | None,
        env: Mapping[str, str] | None,
        strip_env: Iterable[str],
        watch: ProcessWatch,
        call_marker: str | None = None,
    ) -> ProcessResult:
        base = os.environ if self._base_env is None else self._base_env
        strip = tuple(strip_env)
        extra = {
            k: v for k, v in (env or {}).items() if base.get(k) != v and not is_stripped(k, strip)
        }
        extra[SESSION_ENV_VAR] = session_id
        if call_marker is not None:
            extra[CALL_ENV_VAR] = call_marker
        created = await self._call(
            "terminal/create",
            {
                "command": argv[0],
                "args": list(argv[1:]),
                "cwd": str(cwd),
                "env": [{"name": k, "value": v} for k, v in extra.items()],
                "outputByteLimit": output_cap,
            },
        )
        terminal = created.get("terminalId") if isinstance(created, dict) else None
        if not isinstance(terminal, str):
            raise OSError("the editor did not create a terminal")
        started = trio.current_time()
        watch.started_at = started
        if self._on_terminal is not None:
            self._on_terminal(terminal)
        seen = [""]
        exit_status: dict[str, Any] = {}
        try:
            with trio.move_on_after(timeout_s if timeout_s else math.inf) as timer:
                with collapse_group():
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._follow, terminal, seen, on_output)
                        exit_status = await self._call(
                            "terminal/wait_for_exit", {"terminalId": terminal}
                        )
                        nursery.cancel_scope.cancel(reason="the command exited")
            ended_by = EndedBy.TIMEOUT if timer.cancelled_caught else EndedBy.EXIT
            if ended_by is EndedBy.TIMEOUT:
                exit_status = await self._stop(terminal)
            output = await self._output(terminal, seen, on_output)
            return _result(exit_status, output, trio.current_time() - started, ended_by)
        except trio.Cancelled:
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                status = await self._stop(terminal)
                output = await self._output(terminal, seen, None)
                elapsed = trio.current_time() - started
                watch.result = _result(status, output, elapsed, EndedBy.CANCEL, killed=True)
            raise
        finally:
            with trio.move_on_after(CLEANUP_DEADLINE_S) as cleanup:
                cleanup.shield = True
                # (If the connection is gone, the client releases what it had.)
                with contextlib.suppress(OSError):
                    await self._call("terminal/release", {"terminalId": terminal})

    async def _stop(self, terminal: str) -> dict[str, Any]:
        try:
            await self._call("terminal/kill", {"terminalId": terminal})
            status = await self._call("terminal/wait_for_exit", {"terminalId": terminal})
        except OSError:
            return {}
        return status if isinstance(status, dict) else {}

    async def _output(
        self, terminal: str, seen: list[str], on_output: Callable[[str], None] | None
    ) -> str:
        try:
            result = await self._call("terminal/output", {"terminalId": terminal})
        except OSError:
            return seen[0]
        text = result.get("output") if isinstance(result, dict) else None
        if not isinstance(text, str):
            return seen[0]
        if on_output is not None and text.startswith(seen[0]) and len(text) > len(seen[0]):
            on_output(text[len(seen[0]) :])
        seen[0] = text
        return text

    async def _follow(
        self, terminal: str, seen: list[str], on_output: Callable[[str], None] | None
    ) -> None:
        while True:
            await trio.sleep(POLL_S)
            await self._output(terminal, seen, on_output)


def _result(
    status: Mapping[str, Any],
    output: str,
    elapsed: float,
    ended_by: EndedBy,
    *,
    killed: bool = False,
) -> ProcessResult:
    code = status.get("exitCode")
    name = status.get("signal")
    signum = None
    if isinstance(name, str):
        try:
            signum = signal.Signals[name if name.startswith("SIG") else f"SIG{name}"].value
        except KeyError:
            signum = None
    return ProcessResult(
        pid=0,
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        signal=signum,
        elapsed_s=elapsed,
        output=output,
        total_bytes=len(output.encode()),
        elided_bytes=0,
        ended_by=ended_by,
        sigterm_sent=False,
        killed=killed or ended_by is EndedBy.TIMEOUT,
    )
