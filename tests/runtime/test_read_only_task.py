"""Read-only `task` calls (docs/contracts.md, Read-only `task` calls): a `task` whose agent
can only read runs side by side with the reads around it; one whose agent may write runs
alone. The agents come from a real configuration file (`prepare_session`), the model is
the fake server over the real SDKs, and the built-in tools are the real ones, wrapped so
the test can see who ran beside whom (the way an editor's front end wraps them)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import trio

from rawtrio import events as ev
from rawtrio.app.options import SessionSetup, prepare_session
from rawtrio.cli.main import build_parser
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.messages import ProviderKind, ToolCall, ToolResult, check_pairing
from rawtrio.runtime.loop import call_groups
from rawtrio.runtime.runtime import default_registry, open_runtime
from rawtrio.runtime.session import Session
from rawtrio.store.memory import MemoryStore
from rawtrio.testing.fake_model import FakeModelServer, Scenario, open_fake_model_server
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from tests.conftest import LIVENESS_S

#: Liveness bound for a wait that only a call running side by side can end.
HOLD_S = 20.0

AGENTS = """
[agents.default]
permission_mode = "bypass"
max_retries = 0

[agents.explorer]
tools = ["read_file", "list_dir", "glob", "grep"]
max_retries = 0

[agents.writer]
tools = ["read_file", "write_file"]
max_retries = 0

[agents.nester]
tools = ["read_file", "grep", "task"]

[agents.shallow]
tools = ["read_file", "grep", "task"]
max_subagent_depth = 1

[agents.reads_mcp]
tools = ["*", "!write_file", "!edit_file", "!bash", "!bash_stop", "!todo_write", "!task"]
mcp_servers = ["docs"]

[agents.named_only]
tools = ["read_file", "glob"]
mcp_servers = ["docs"]

[agents.cleared]
tools = ["*", "!write_file", "!edit_file", "!bash", "!bash_stop", "!todo_write", "!task"]

[mcp_servers.docs]
command = ["docs-server"]
"""


def config_text(wire: ProviderKind, server: FakeModelServer | None) -> str:
    url = "http://127.0.0.1:9"
    if server is not None:
        url = server.base_url if wire == "anthropic" else server.openai_base_url
    return (
        f'default_model = "fake"\n\n[models.fake]\nprovider = "{wire}"\n'
        f'model_id = "test-model"\nbase_url = "{url}"\n{AGENTS}'
    )


async def setup_for(
    tmp_path: Path, wire: ProviderKind, server: FakeModelServer | None, mode: str | None = None
) -> SessionSetup:
    config = tmp_path / "config.toml"
    config.write_text(config_text(wire, server))
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    (cwd / "a.txt").write_text("alpha\n")
    (cwd / "child.txt").write_text("the child's file\n")
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": "/usr/bin:/bin",
        "RAWTRIO_CONFIG": str(config),
        "RAWTRIO_STATE_DIR": str(tmp_path / "state"),
        "ANTHROPIC_API_KEY": "test-key",
        "OPENAI_API_KEY": "test-key",
    }
    argv = ["-p", "go", "--cwd", str(cwd), *(["--mode", mode] if mode else [])]
    args: argparse.Namespace = build_parser().parse_args(argv)
    return await prepare_session(args, headless=True, env=env)


@dataclasses.dataclass
class Watch:
    """Wraps `read_file` and `grep`: the child's read of `child.txt` waits (up to `HOLD_S`,
    unless `wait_for_grep` is off) for the parent's `grep` to have run; `hold_parent_read`
    and `hold_child_read` keep the parent's read of `a.txt`, the child's read, running
    until cancelled."""

    hold_parent_read: bool = False
    wait_for_grep: bool = True
    hold_child_read: bool = False
    grep_done: trio.Event = dataclasses.field(default_factory=trio.Event)
    child_read_began: trio.Event = dataclasses.field(default_factory=trio.Event)
    parent_read_began: trio.Event = dataclasses.field(default_factory=trio.Event)
    #: For each read of `child.txt` that returned: whether `grep` had run by then.
    child_saw_grep: list[bool] = dataclasses.field(default_factory=list)

    def wrap(self, tool: Tool) -> Tool:
        inner = tool.handler
        if tool.id == "grep":

            async def grep(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
                out = await inner(ctx, args)
                self.grep_done.set()
                return out

            return dataclasses.replace(tool, handler=grep)
        if tool.id == "read_file":

            async def read(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
                path = str(args.get("path", ""))
                if path == "child.txt":
                    self.child_read_began.set()
                    if self.hold_child_read:
                        await trio.sleep_forever()
                    with trio.move_on_after(HOLD_S if self.wait_for_grep else 0):
                        await self.grep_done.wait()
                    self.child_saw_grep.append(self.grep_done.is_set())
                elif path == "a.txt":
                    self.parent_read_began.set()
                    if self.hold_parent_read:
                        await trio.sleep_forever()
                return await inner(ctx, args)

            return dataclasses.replace(tool, handler=read)
        return tool


def read(path: str) -> dict[str, Any]:
    return {"name": "read_file", "arguments": {"path": path}}


def task(agent: str) -> dict[str, Any]:
    return {
        "name": "task",
        "arguments": {"description": f"ask {agent}", "prompt": "child work", "agent": agent},
    }


GREP = {"name": "grep", "arguments": {"pattern": "alpha"}}


def scenario(parent_calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "rules": [
            {
                "match": "re:child work$",
                "replies": [{"tool_calls": [read("child.txt")]}, {"text": "child done"}],
            },
            {"match": "re:after$", "replies": [{"text": "fine"}]},
            {
                "match": "re:go$",
                "replies": [{"text": "Looking.", "tool_calls": parent_calls}, {"text": "Done."}],
            },
        ]
    }


@asynccontextmanager
async def parent_session(
    tmp_path: Path,
    wire: ProviderKind,
    parent_calls: list[dict[str, Any]],
    watch: Watch,
    mode: str | None = None,
) -> AsyncIterator[tuple[Session, MemoryStore]]:
    store = MemoryStore()
    factory = partial(default_registry, wrap=watch.wrap)
    async with open_fake_model_server(Scenario.from_dict(scenario(parent_calls))) as server:
        setup = await setup_for(tmp_path, wire, server, mode)
        async with open_runtime(store, registry_factory=factory) as runtime:
            session = await runtime.create_session(setup.options)
            with trio.fail_after(LIVENESS_S):
                yield session, store


async def until_ended(sub: Any, session_id: str) -> list[ev.Event]:
    out: list[ev.Event] = []
    async for event in sub:
        out.append(event)
        if isinstance(event, ev.TurnEnded) and event.session_id == session_id:
            break
    return out


def position(events: list[ev.Event], kind: type[ev.Event], name: str) -> int:
    return next(
        i for i, e in enumerate(events) if isinstance(e, kind) and getattr(e, "name", "") == name
    )


# --- what counts as a read-only agent ------------------------------------------------


async def test_an_agent_is_read_only_when_every_tool_it_selects_is(tmp_path: Path) -> None:
    setup = await setup_for(tmp_path, "anthropic", None)
    judge = setup.options.tools.task_reads_only
    assert judge is not None
    judged = {name: judge(name) for name in ("explorer", "writer", "nester", "shallow")}
    assert judged == {"explorer": True, "writer": False, "nester": False, "shallow": True}
    # MCP tools are known only when the child starts: a glob that could select one counts.
    assert judge("reads_mcp") is False
    assert judge("named_only") is True
    assert judge("cleared") is True
    # Omitted: an agent like the session's own (here everything, so it may write).
    assert judge(None) is False
    assert judge("nobody") is False


async def test_the_task_tool_declares_each_call_by_its_agent(tmp_path: Path) -> None:
    setup = await setup_for(tmp_path, "anthropic", None)
    registry = default_registry(setup.options)
    tool = registry.get("task")
    assert tool is not None
    assert tool.read_only is False  # its permission decision stays the `task` tool's
    assert tool.read_only_for is not None
    base = {"description": "d", "prompt": "p"}
    assert tool.read_only_for({**base, "agent": "explorer"}) is True
    assert tool.read_only_for({**base, "agent": "writer"}) is False
    assert tool.read_only_for(base) is False
    # Arguments are judged before validation: a bad `agent` is not read-only, no error.
    assert tool.read_only_for({**base, "agent": ["explorer"]}) is False


async def test_read_only_tasks_group_with_reads_and_writing_ones_do_not(
    tmp_path: Path,
) -> None:
    async with parent_session(tmp_path, "anthropic", [], Watch()) as (session, _):

        def call(i: int, name: str, **args: Any) -> ToolCall:
            return ToolCall(str(i), name, "{}", freeze(args))

        def explore(i: int) -> ToolCall:
            return call(i, "task", description="d", prompt="p", agent="explorer")

        def write(i: int) -> ToolCall:
            return call(i, "task", description="d", prompt="p", agent="writer")

        def grouped(*calls: ToolCall) -> list[list[str]]:
            return [[c.id for c in g] for g in call_groups(session, calls)]

        reading, grep = call(1, "read_file", path="a"), call(3, "grep", pattern="x")
        assert grouped(reading, explore(2), grep) == [["1", "2", "3"]]
        assert grouped(reading, write(2), grep) == [["1"], ["2"], ["3"]]
        # Children of one reply run together whatever their agents; a read after a
        # writing child waits for it.
        assert grouped(explore(1), write(2), grep) == [["1", "2"], ["3"]]
        assert grouped(reading, explore(2), write(3)) == [["1", "2"], ["3"]]
        assert grouped(write(1), explore(2), grep) == [["1", "2"], ["3"]]
        edit = call(4, "write_file", path="b", content="x")
        assert grouped(explore(1), edit, explore(2)) == [["1"], ["4"], ["2"]]


# --- running them ----------------------------------------------------------------------


async def test_a_read_only_task_runs_side_by_side_with_reads(
    wire: ProviderKind, tmp_path: Path
) -> None:
    """The child's read returns only once the parent's `grep`, listed after the `task`
    call, has run: one after another, the child would wait `HOLD_S` and say so."""
    watch = Watch()
    calls = [read("a.txt"), task("explorer"), GREP]
    async with parent_session(tmp_path, wire, calls, watch) as (session, store):
        with session.subscribe() as sub:
            ended = await session.run_turn("go")
            events = await until_ended(sub, session.id)
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        assert watch.child_saw_grep == [True]
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in results] == [ToolStatus.OK] * 3
        assert results[1].content == "child done"
        # Committed in listed order, though the grep finished before the child.
        finished = [e.name for e in events if isinstance(e, ev.ToolCallFinished)]
        assert finished == ["read_file", "task", "grep"]
        assert position(events, ev.ToolCallStarted, "grep") < position(
            events, ev.ToolCallFinished, "task"
        )
        assert check_pairing(session.context) == []
        [child] = await store.list_children(session.id)
        assert check_pairing(await store.load_context(child.id)) == []


async def test_a_task_whose_agent_may_write_runs_alone(wire: ProviderKind, tmp_path: Path) -> None:
    watch = Watch(wait_for_grep=False)
    calls = [read("a.txt"), task("writer"), GREP]
    async with parent_session(tmp_path, wire, calls, watch) as (session, _):
        with session.subscribe() as sub:
            ended = await session.run_turn("go")
            events = await until_ended(sub, session.id)
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in results] == [ToolStatus.OK] * 3
        # It waited for the read before it, and the grep after it waited for it.
        assert watch.child_saw_grep == [False]
        started, done = ev.ToolCallStarted, ev.ToolCallFinished
        assert position(events, done, "read_file") < position(events, started, "task")
        assert position(events, done, "task") < position(events, started, "grep")


async def test_cancel_mid_group_with_a_read_only_task_gives_every_call_one_result(
    wire: ProviderKind, tmp_path: Path
) -> None:
    """Extends the read-only group cancellation test with a child: the parent's read and
    the child's read are running, the grep finished — all three side by side; a cancel
    then commits the grep's real result, `cancelled` for the read and the `task` call, and
    the child records a result for its own cut call and one outcome."""
    watch = Watch(hold_parent_read=True, hold_child_read=True)
    calls = [read("a.txt"), task("explorer"), GREP]
    async with parent_session(tmp_path, wire, calls, watch) as (session, store):
        with session.subscribe() as sub:
            turn_id = await session.submit("go")
            await watch.parent_read_began.wait()
            await watch.child_read_began.wait()
            await watch.grep_done.wait()
            session.cancel("test cancel")
            ended = await session.wait_turn(turn_id)
            events = await until_ended(sub, session.id)
        assert ended.outcome is TurnOutcome.CANCELLED
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [(r.name, r.status, r.started) for r in results] == [
            ("read_file", ToolStatus.CANCELLED, True),
            ("task", ToolStatus.CANCELLED, True),
            ("grep", ToolStatus.OK, True),
        ]
        finished = [e.call_id for e in events if isinstance(e, ev.ToolCallFinished)]
        assert finished == [r.call_id for r in results]
        assert check_pairing(session.context) == []
        [child] = await store.list_children(session.id)
        assert results[1].details["child_session_id"] == child.id
        child_results = [m for m in await store.load_context(child.id) if isinstance(m, ToolResult)]
        assert [(r.name, r.status) for r in child_results] == [("read_file", ToolStatus.CANCELLED)]
        child_ends = [
            e for e in await store.events_since(child.id, 0) if isinstance(e, ev.TurnEnded)
        ]
        assert [e.outcome for e in child_ends] == [TurnOutcome.CANCELLED]
        again = await session.run_turn("after")
        assert again.outcome is TurnOutcome.COMPLETED, again.reason


# --- permissions judge a task call by its agent too ----------------------------------


async def test_plan_mode_lets_a_read_only_task_run_and_denies_a_writing_one(
    wire: ProviderKind, tmp_path: Path
) -> None:
    """Plan mode allows only read-only calls: a `task` whose agent can only read is one (it
    runs, unasked), one whose agent may write is denied by the mode."""
    watch = Watch(wait_for_grep=False)
    calls = [task("explorer"), task("writer")]
    async with parent_session(tmp_path, wire, calls, watch, mode="plan") as (session, _):
        ended = await session.run_turn("go")
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        results = [m for m in session.context if isinstance(m, ToolResult)]
        assert [r.status for r in results] == [ToolStatus.OK, ToolStatus.DENIED]
        assert "plan mode allows only read-only tools" in str(results[1].content)
        assert watch.child_saw_grep == [False]  # the explorer's child ran its read
