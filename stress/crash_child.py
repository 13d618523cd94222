"""The process the crash suite kills: `python -m stress.crash_child DB CWD WIRE BASE_URL
[SCENARIO]`.

Or, to start children without paying for the imports each time (the SDKs take 1–3 s of
CPU), `python -m stress.crash_child --serve`: a fork server (see `serve`) that imports
everything once and forks one child per request. A forked child runs exactly what the
command line runs, in a fresh `trio.run`.

It creates a session in the SQLite store DB, runs the turns of SCENARIO (`tools`, the
default: two turns with `bash` calls; `subagents`: one turn whose two `task` children
each run a `bash` call after an approval — see `SCENARIOS`) through the real runtime, SDK
and the parent's fake model server (at BASE_URL, speaking WIRE), and says on stdout, one
line at a time and unbuffered, what it has done — so the parent, which SIGKILLs it at a
random moment, knows what was durable before the kill:

- `ready <session id>` — the session exists; the turns start now;
- `begin <write>` — an awaited store write (`begin_turn`, `commit`, `mark_call_started`,
  `end_turn`) was called; one of these lines follows when it returned:
  `begun <turn id>`, `committed <JSON list of message rows>`, `started <call id>`,
  `ended <turn id> <outcome>`;
- `event <seq> <type>` — a display event was recorded (queued: it is durable once a
  write queued after it has returned);
- `done` — the turns ended; the process exits 0.

A line about a `task` child's session starts with `child <child session id> ` and goes on
as above (`child 3f… started toolu_…`); every other line is about the session of `ready`.

A line is written after what it reports, so a line the parent read is a fact; a kill
between the fact and its line only makes the parent's knowledge smaller.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import select
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio.contracts import TurnOutcome
from rawtrio.events import Event, PermissionRequested
from rawtrio.messages import Message, ProviderKind
from rawtrio.permissions.approval import ApprovalDecision
from rawtrio.permissions.rules import PermissionMode
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.store import codec
from rawtrio.store.base import ParentLink, SessionRecord
from rawtrio.store.sqlite import SqliteStore
from rawtrio.tools.settings import ToolSettings

RUNS_FILE: Final = "runs.txt"
WIRES: Final[tuple[ProviderKind, ...]] = ("anthropic", "openai-chat", "openai-responses")
#: The scenarios and the prompts of their turns.
SCENARIOS: Final[dict[str, tuple[str, ...]]] = {
    "tools": ("crash-turn-one", "crash-turn-two"),
    "subagents": ("crash-subagent-turn",),
}
PROMPTS: Final = SCENARIOS["tools"]
#: Each call appends its tag to `RUNS_FILE` when it starts, then works a little while.
TAGS: Final = ("one", "two", "three", "child-a", "child-b")
#: How long the `subagents` scenario's front end takes to approve a call.
APPROVAL_DELAY_S: Final = 0.02
TOOL_SETTINGS: Final = ToolSettings(sigterm_grace_s=0.2, bash_timeout_s=30)

_TEXT = (
    "Looking at the repository layout first, then running the two commands that were "
    "asked for, one after the other, and reading what they print before answering."
)


#: What each call leaves running besides its own short sleep: a process in its group and
#: one that left it (`setsid`). The call ends both when it finishes; when rawtrio is
#: killed mid-call, only its watchdog can, and the parent checks it did (no survivors).
LINGERING: Final = "sleep 30 >/dev/null 2>&1 & setsid sleep 30 >/dev/null 2>&1 &"


def _bash(tag: str) -> dict[str, Any]:
    command = f"echo {tag} >> {RUNS_FILE}; {LINGERING} sleep 0.1"
    return {"name": "bash", "arguments": {"command": command}}


def _task(description: str, prompt: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": description, "prompt": prompt}}


#: `tools`: two turns, the first with a batch of two calls, the second with one.
#: `subagents`: one turn with two `task` calls; one child runs at a time (the other waits
#: for a slot), each streams, asks for its `bash` call (approved after
#: `APPROVAL_DELAY_S`), runs it and answers. Every reply streams in 8-character chunks
#: 2 ms apart. Anything else (the follow-up) gets "ok".
#: The prompts must END the user text: after a kill the Anthropic adapter merges the cut
#: turn's prompt and the follow-up into one user message, and the fake server matches on
#: their joined text (a substring rule would replay turn one for the follow-up).
SCRIPT: Final[dict[str, Any]] = {
    "rules": [
        {
            "match": f"re:{PROMPTS[0]}$",
            "replies": [
                {"text": _TEXT, "delay_ms": 2, "tool_calls": [_bash("one"), _bash("two")]},
                {"text": "Both commands ran; " + _TEXT, "delay_ms": 2},
            ],
        },
        {
            "match": f"re:{PROMPTS[1]}$",
            "replies": [
                {"text": _TEXT[:80], "delay_ms": 2, "tool_calls": [_bash("three")]},
                {"text": "Done. " + _TEXT[:60], "delay_ms": 2},
            ],
        },
        {
            "match": f"re:{SCENARIOS['subagents'][0]}$",
            "replies": [
                {
                    "text": _TEXT[:80],
                    "delay_ms": 2,
                    "tool_calls": [
                        _task("first child", "crash-child-a"),
                        _task("second child", "crash-child-b"),
                    ],
                },
                {"text": "Both children answered. " + _TEXT[:60], "delay_ms": 2},
            ],
        },
        *(
            {
                "match": f"re:crash-child-{x}$",
                "replies": [
                    {"text": _TEXT[:100], "delay_ms": 2, "tool_calls": [_bash(f"child-{x}")]},
                    {"text": f"Child {x} ran it. " + _TEXT[:60], "delay_ms": 2},
                ],
            }
            for x in ("a", "b")
        ),
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


def session_options(
    cwd: Path, wire: ProviderKind, base_url: str, scenario: str = "tools"
) -> SessionOptions:
    provider = ProviderSettings(
        kind=wire, model="test-model", api_key="test-key", base_url=base_url, max_retries=0
    )
    options = SessionOptions(cwd=cwd, provider=provider, tools=TOOL_SETTINGS, max_steps=8)
    if scenario == "subagents":  # every call asks; one child at a time
        options = dataclasses.replace(
            options, permission_mode=PermissionMode.DEFAULT, max_concurrent_subagents=1
        )
    return options


def say(line: str) -> None:
    """One whole line on stdout, unbuffered (a single write: never torn by the kill)."""
    data = (line + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


class ReportingStore(SqliteStore):
    """A `SqliteStore` that says on stdout what it has made durable (a `task` child's
    lines prefixed with `child <its id>`)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.children: set[str] = set()

    def say(self, session_id: str, line: str) -> None:
        say(f"child {session_id} {line}" if session_id in self.children else line)

    async def create_session(
        self,
        *,
        session_id: str,
        cwd: str,
        system_prompt: str,
        provider: str,
        model: str,
        title: str,
        parent: ParentLink | None = None,
    ) -> SessionRecord:
        if parent is not None:
            self.children.add(session_id)
        return await super().create_session(
            session_id=session_id,
            cwd=cwd,
            system_prompt=system_prompt,
            provider=provider,
            model=model,
            title=title,
            parent=parent,
        )

    async def begin_turn(self, session_id: str, turn_id: str, request_id: str | None) -> None:
        self.say(session_id, "begin begin_turn")
        await super().begin_turn(session_id, turn_id, request_id)
        self.say(session_id, f"begun {turn_id}")

    async def commit(self, session_id: str, turn_id: str, messages: Sequence[Message]) -> None:
        rows = [codec.message_to_row(m) for m in messages]
        self.say(session_id, "begin commit")
        await super().commit(session_id, turn_id, messages)
        self.say(session_id, f"committed {json.dumps(rows)}")

    async def mark_call_started(self, session_id: str, turn_id: str, call_id: str) -> None:
        self.say(session_id, "begin mark_call_started")
        await super().mark_call_started(session_id, turn_id, call_id)
        self.say(session_id, f"started {call_id}")

    async def end_turn(
        self, session_id: str, turn_id: str, outcome: TurnOutcome, reason: str
    ) -> None:
        self.say(session_id, "begin end_turn")
        await super().end_turn(session_id, turn_id, outcome, reason)
        self.say(session_id, f"ended {turn_id} {outcome.value}")

    def record_event(self, event: Event) -> None:
        super().record_event(event)
        self.say(event.session_id, f"event {event.seq} {event.type}")


async def approve_everything(session: Session, *, task_status: trio.TaskStatus[None]) -> None:
    """The `subagents` scenario's front end: allows each request (the children's are
    relayed on the parent) after `APPROVAL_DELAY_S`, so kills land in permission waits."""
    with session.subscribe() as events:
        task_status.started()
        async for event in events:
            if isinstance(event, PermissionRequested):
                await trio.sleep(APPROVAL_DELAY_S)
                session.answer_permission(event.request_id, ApprovalDecision.allow_once())


async def run(
    db: Path, cwd: Path, wire: ProviderKind, base_url: str, scenario: str = "tools"
) -> None:
    store = ReportingStore(db)
    async with store, open_runtime(store, retention_days=0) as runtime:
        session = await runtime.create_session(session_options(cwd, wire, base_url, scenario))
        async with trio.open_nursery() as nursery:
            await nursery.start(approve_everything, session)
            say(f"ready {session.id}")
            for prompt in SCENARIOS[scenario]:
                await session.run_turn(prompt)
            nursery.cancel_scope.cancel(reason="the turns ended")
    say("done")


def child_main(argv: Sequence[str]) -> None:
    db, cwd, wire, base_url, *rest = argv
    scenario = rest[0] if rest else "tools"
    if wire not in WIRES:
        raise SystemExit(f"unknown wire {wire}")
    if scenario not in SCENARIOS or len(rest) > 1:
        raise SystemExit(f"unknown scenario {' '.join(rest)}")
    trio.run(run, Path(db), Path(cwd), wire, base_url, scenario)


#: How often the fork server looks for exited children while no request comes.
_REAP_POLL_S: Final = 0.01


def serve(control: socket.socket, scenarios: Sequence[str] = tuple(SCENARIOS)) -> None:
    """The fork server: read requests on `control`, fork a child for each.

    A request is one datagram-sized message: a JSON list `[id, db, cwd, wire, base_url,
    scenario]`
    with two descriptors attached (SCM_RIGHTS), the child's stdout and stderr; the parent
    keeps the read ends, so it sees end of file when the child dies, as with a spawned
    process. Replies on stdout, one JSON object a line: `{"id": id, "pid": pid}` once
    forked, `{"pid": pid, "status": returncode}` once reaped (negative: the signal).

    The server is a child subreaper and reaps every child it gets — its own and the tool
    processes and watchdogs a killed child orphaned — with `waitpid(-1)`: it runs no trio
    and waits for nothing else. Imports are done before the first fork, and no thread
    runs, so a fork is safe.
    """
    from rawtrio.processes.subreaper import become_child_subreaper

    warm_up(scenarios)
    become_child_subreaper()
    ours: set[int] = set()
    say(json.dumps({"serving": os.getpid()}))
    while True:
        ready, _, _ = select.select([control], [], [], _REAP_POLL_S)
        if ready:
            data, fds, _, _ = socket.recv_fds(control, 65536, 2)
            if not data:
                return  # the parent closed the control socket
            request = json.loads(data)
            pid = os.fork()
            if pid == 0:
                _run_forked(control, request[1:], fds)
            for fd in fds:
                os.close(fd)
            ours.add(pid)
            say(json.dumps({"id": request[0], "pid": pid}))
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in ours:
                ours.discard(pid)
                say(json.dumps({"pid": pid, "status": os.waitstatus_to_exitcode(status)}))


def warm_up(scenarios: Sequence[str] = tuple(SCENARIOS)) -> None:
    """Run the `tools` scenario once per wire, and `subagents` once if among `scenarios`
    (the ones the children will run), in this process, against
    a fake model server of its own, so that everything a child imports or builds lazily
    (the SDKs' resources, schema validation, the tools, the `task` path) is there before
    the first fork; then freeze the heap, so that the children's garbage collections leave
    the shared pages alone. Its lines go nowhere: stdout is the parent's reply pipe."""
    null = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(null, 1)
    try:
        trio.run(_warm_up_runs, tuple(scenarios))
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
    gc.collect()
    gc.freeze()


async def _warm_up_runs(scenarios: tuple[str, ...]) -> None:
    from rawtrio.testing.fake_model import Scenario, open_fake_model_server

    with tempfile.TemporaryDirectory(prefix="rawtrio-crash-warm-") as tmp:
        async with (
            open_fake_model_server(Scenario.from_dict(SCRIPT)) as server,
            trio.open_nursery() as nursery,
        ):
            # Every wire once; the `task` path once more (its SDK is warm by then).
            runs = [(w, "tools") for w in WIRES]
            if "subagents" in scenarios:
                runs.append(("anthropic", "subagents"))
            for wire, scenario in runs:
                cwd = Path(tmp) / f"{wire}-{scenario}"
                cwd.mkdir()
                url = server.base_url if wire == "anthropic" else server.openai_base_url
                nursery.start_soon(run, cwd / "sessions.db", cwd, wire, url, scenario)


def _run_forked(control: socket.socket, argv: list[str], fds: list[int]) -> None:
    """In the forked child: stdout and stderr to the parent's pipes, then the child's run."""
    code = 0
    try:
        control.close()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (null, *fds):
            os.close(fd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        child_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stderr.flush()
        os._exit(code)


def send_request(control: socket.socket, request: list[object], fds: Sequence[int]) -> None:
    """The parent's side of a request (see `serve`)."""
    socket.send_fds(control, [json.dumps(request).encode()], list(fds))


def main(argv: Sequence[str]) -> None:
    if argv[:1] == ["--serve"]:
        unknown = set(argv[1:]) - set(SCENARIOS)
        if unknown:
            raise SystemExit(f"unknown scenario(s) {' '.join(sorted(unknown))}")
        serve(socket.socket(fileno=0), argv[1:] or tuple(SCENARIOS))
    else:
        child_main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
