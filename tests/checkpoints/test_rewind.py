"""Rewinding a real session (the fake model server, real tools) to just before a prompt:
the files, the conversation (a fork), or both; a conflict leaves everything as it was."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio import events as ev
from rawtrio.checkpoints import rewind
from rawtrio.checkpoints.restore import apply_rewind
from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.context.compaction import CompactionSettings
from rawtrio.contracts import TurnOutcome
from rawtrio.errors import UsageError
from rawtrio.messages import UserMessage
from rawtrio.runtime import Runtime
from rawtrio.store.base import SessionStore
from rawtrio.store.sqlite import SqliteStore
from tests.checkpoints.helpers import Picture, picture
from tests.checkpoints.rewind_support import PROMPTS, make_small_project, scenario_three_turns
from tests.conftest import session_on


class Ran:
    """A session after the three turns: the project's picture and the stored records
    before each prompt."""

    def __init__(self, session: Any, runtime: Runtime, store: SessionStore, cp: CheckpointStore):
        self.session = session
        self.runtime = runtime
        self.store = store
        self.cp = cp
        self.pictures: list[Picture] = []
        self.contexts: list[list[Any]] = []

    async def turns(self, project: Path) -> None:
        self.project = project
        for text in PROMPTS:
            self.pictures.append(picture(project))
            self.contexts.append(await self.store.load_context(self.session.id))
            result = await self.session.run_turn(text)
            assert result.outcome is TurnOutcome.COMPLETED, result.reason
        self.pictures.append(picture(project))

    async def prompts(self) -> list[rewind.Prompt]:
        return rewind.prompts_of(await self.runtime.session_events(self.session.id))

    async def rewind(self, number: int, what: rewind.What, force: bool = False) -> Any:
        return await rewind.rewind(
            self.runtime, self.cp, self.session.id, await self.prompts(), number, what, force=force
        )


@contextlib.asynccontextmanager
async def three_turns_ran(tmp_path: Path) -> AsyncIterator[Ran]:
    """A session of a small project that ran the three turns, its checkpoints kept."""
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state" / "checkpoints"
    async with session_on(scenario_three_turns(), "anthropic", project, checkpoint_dir=state) as (
        session,
        _server,
        runtime,
    ):
        ran = Ran(session, runtime, runtime.store, CheckpointStore(state, project))
        await ran.turns(project)
        yield ran


def user_texts(context: list[Any]) -> list[str]:
    return [m.text for m in context if isinstance(m, UserMessage)]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_rewind_to_prompt_two_restores_files_and_forks_the_conversation(
    tmp_path: Path, kind: str
) -> None:
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state" / "checkpoints"
    options: dict[str, Any] = {"checkpoint_dir": state}
    async with contextlib.AsyncExitStack() as stack:
        if kind == "sqlite":
            options["store"] = await stack.enter_async_context(SqliteStore(tmp_path / "s.db"))
        session, _server, runtime = await stack.enter_async_context(
            session_on(scenario_three_turns(), "anthropic", project, **options)
        )
        ran = Ran(session, runtime, runtime.store, CheckpointStore(state, project))
        await ran.turns(project)
        prompts = await ran.prompts()
        assert [p.text for p in prompts] == list(PROMPTS)
        source_context = await runtime.store.load_context(session.id)
        source_events = await runtime.session_events(session.id)
        source_record = await runtime.get_session(session.id)

        result = await ran.rewind(2, "both")

        assert result.applied
        assert not result.conflicts
        assert picture(project) == ran.pictures[1]  # bytes and modes as before prompt 2
        assert (project / "run.sh").stat().st_mode & 0o777 == 0o640
        assert result.restored == ("a.txt", "keep.txt", "new/dir/t.txt", "run.sh")
        fork = result.session_id
        assert fork is not None
        assert fork != session.id
        fork_context = await runtime.store.load_context(fork)
        assert fork_context == ran.contexts[1]
        assert user_texts(fork_context) == ["first change"]
        fork_prompts = rewind.prompts_of(await runtime.session_events(fork))
        assert [p.text for p in fork_prompts] == ["first change"]
        record = await runtime.get_session(fork)
        assert record.title == f"{source_record.title} (rewound to prompt 2)"
        assert result.describe().startswith(
            f"rewound to prompt 2: conversation forked as {record.title!r} ({fork}), "
            "4 files restored"
        )
        # The source session is untouched and still listed.
        assert await runtime.store.load_context(session.id) == source_context
        assert await runtime.session_events(session.id) == source_events
        listed = {r.id for r in await runtime.list_sessions()}
        assert {session.id, fork} <= listed
        # Its checkpoints of turns 2 and 3 are undone (redo puts them back).
        states = {c.number: c.state for c in ran.cp.change_sets(session.id)}
        assert states == {1: "applied", 2: "undone", 3: "undone"}


async def test_conversation_only_leaves_the_files_and_files_only_makes_no_fork(
    tmp_path: Path,
) -> None:
    async with three_turns_ran(tmp_path) as ran:
        runtime, project = ran.runtime, ran.project
        sessions_before = len(await runtime.list_sessions())

        talk = await ran.rewind(3, "conversation")
        assert talk.applied
        assert talk.restored == ()
        assert picture(project) == ran.pictures[3]  # the files stay as the turns left them
        assert talk.session_id is not None
        assert await runtime.store.load_context(talk.session_id) == ran.contexts[2]
        assert talk.describe().endswith(f"({talk.session_id})")

        files = await ran.rewind(1, "files")
        assert files.session_id is None
        assert picture(project) == ran.pictures[0]
        assert len(await runtime.list_sessions()) == sessions_before + 1
        assert files.describe() == "rewound to prompt 1: 4 files restored"

        with pytest.raises(UsageError, match="no files to restore"):
            await ran.rewind(2, "files")  # everything from prompt 1 on is undone already
        both = await ran.rewind(2, "both")  # the conversation still goes back
        assert both.applied
        assert both.session_id is not None
        assert both.describe().endswith("no files to restore (no later turn changed any)")
        with pytest.raises(UsageError, match="no prompt 4: the session has prompts 1 to 3"):
            await ran.rewind(4, "both")


async def test_a_file_changed_outside_is_a_conflict_and_nothing_is_done(tmp_path: Path) -> None:
    async with three_turns_ran(tmp_path) as ran:
        session, runtime, project = ran.session, ran.runtime, ran.project
        # Between turns 2 and 3 someone else would have changed run.sh: here, after turn 3,
        # a.txt is changed outside rawtrio.
        (project / "a.txt").write_bytes(b"my own words\n")
        outside = picture(project)
        sessions_before = len(await runtime.list_sessions())
        records_before = ran.cp.change_sets(session.id)

        refused = await ran.rewind(2, "both")

        assert not refused.applied
        assert [c.path for c in refused.conflicts] == ["a.txt"]
        assert "found 13 bytes, mode 644" in refused.conflicts[0].describe()
        assert refused.session_id is None
        assert picture(project) == outside  # nothing written
        assert len(await runtime.list_sessions()) == sessions_before  # no fork either
        assert ran.cp.change_sets(session.id) == records_before
        assert "refused: 1 file(s) changed outside rawtrio since" in refused.describe()

        forced = await ran.rewind(2, "both", force=True)
        assert forced.applied
        assert forced.session_id is not None
        assert picture(project) == ran.pictures[1]


async def test_a_change_between_two_rewound_turns_is_a_conflict_too(tmp_path: Path) -> None:
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state" / "checkpoints"
    async with session_on(scenario_three_turns(), "anthropic", project, checkpoint_dir=state) as (
        session,
        _server,
        runtime,
    ):
        ran = Ran(session, runtime, runtime.store, CheckpointStore(state, project))
        for text in PROMPTS[:2]:
            await session.run_turn(text)
        (project / "a.txt").write_bytes(b"edited between turns\n")
        await session.run_turn(PROMPTS[2])
        after = picture(project)
        refused = await ran.rewind(2, "files")
        assert not refused.applied
        [conflict] = refused.conflicts
        assert conflict.path == "a.txt"
        assert "changed outside rawtrio after checkpoint" in conflict.found
        assert picture(project) == after


async def test_prompt_positions_are_where_each_prompt_begins(tmp_path: Path) -> None:
    project = make_small_project(tmp_path / "p")
    async with session_on(scenario_three_turns(), "anthropic", project) as (
        session,
        _server,
        runtime,
    ):
        turns: list[str] = []
        for text in PROMPTS:
            turns.append(await session.submit(text))
            await session.wait_turn(turns[-1])
        context = await runtime.store.load_context(session.id)
        for turn_id, text in zip(turns, PROMPTS, strict=True):
            at = await runtime.store.prompt_position(session.id, turn_id)
            assert at is not None
            message = context[at]
            assert isinstance(message, UserMessage)
            assert message.text == text
        assert await runtime.store.prompt_position(session.id, "no-such-turn") is None
        with pytest.raises(UsageError, match="has no prompt of turn"):
            await runtime.fork_session(session.id, before_turn="no-such-turn")
        events = await runtime.session_events(session.id)
        assert sum(isinstance(e, ev.UserMessageCommitted) for e in events) == 3


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_compaction_between_prompts_is_undone_or_kept_by_where_the_fork_cuts(
    tmp_path: Path, kind: str
) -> None:
    project = make_small_project(tmp_path / "p")
    options: dict[str, Any] = {"compaction": CompactionSettings(keep_last_turns=1)}
    async with contextlib.AsyncExitStack() as stack:
        if kind == "sqlite":
            options["store"] = await stack.enter_async_context(SqliteStore(tmp_path / "s.db"))
        session, _server, runtime = await stack.enter_async_context(
            session_on(scenario_three_turns(), "anthropic", project, **options)
        )
        contexts = []
        for n, text in enumerate(PROMPTS):
            if n == 2:
                ended = await session.compact(None)
                assert ended.outcome == "compacted", ended
            contexts.append(await runtime.store.load_context(session.id))
            await session.run_turn(text)
        # The compaction replaced what came before prompt 2: prompt 3's context starts anew.
        assert contexts[2][: len(contexts[1])] != contexts[1]
        prompts = rewind.prompts_of(await runtime.session_events(session.id))
        for number in (2, 3):
            result = await rewind.rewind(runtime, None, session.id, prompts, number, "conversation")
            assert result.session_id is not None
            forked = await runtime.store.load_context(result.session_id)
            assert forked == contexts[number - 1], number


async def test_a_cancel_that_lands_after_the_fork_still_restores_the_files(
    tmp_path: Path,
) -> None:
    """Once a rewind starts changing things it finishes both halves: a Ctrl-C or SIGTERM
    landing between the fork and the file restore used to leave a fork whose files were
    never put back (the restore was skipped by the cancellation)."""
    async with three_turns_ran(tmp_path) as ran:
        session, runtime, project = ran.session, ran.runtime, ran.project
        prompts = await ran.prompts()
        forks: list[str] = []

        class CancelledAfterFork:
            async def fork_session(
                self, source_id: str, *, before_turn: str | None = None, title: str | None = None
            ) -> str:
                new_id = await runtime.fork_session(source_id, before_turn=before_turn, title=title)
                forks.append(new_id)
                scope.cancel(reason="Ctrl-C right after the fork")
                return new_id

            async def get_session(self, session_id: str) -> Any:
                return await runtime.get_session(session_id)

        result = None
        with trio.CancelScope() as scope:
            result = await rewind.rewind(
                CancelledAfterFork(), ran.cp, session.id, prompts, 2, "both"
            )
            await trio.lowlevel.checkpoint()  # the cancel comes at the next checkpoint
        assert scope.cancelled_caught
        assert result is not None  # the rewind's result still reached its caller
        assert result.applied
        assert result.session_id == forks[0]
        assert len(forks) == 1
        assert picture(project) == ran.pictures[1]  # the files went back with the fork
        states = {c.number: c.state for c in ran.cp.change_sets(session.id)}
        assert states == {1: "applied", 2: "undone", 3: "undone"}


async def test_a_rewind_stopped_part_way_says_what_it_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changing between the check and the restore stops the rewind after the
    checkpoints it already put back. That is not a refusal: the chats used to ask to
    overwrite "0 file(s)" and then say "nothing was done"."""
    async with three_turns_ran(tmp_path) as ran:
        project = ran.project

        def changed_meanwhile(*args: Any, **kwargs: Any) -> Any:
            (project / "new" / "dir" / "t.txt").write_bytes(b"changed meanwhile\n")
            return apply_rewind(*args, **kwargs)

        monkeypatch.setattr("rawtrio.checkpoints.rewind.apply_rewind", changed_meanwhile)
        result = await ran.rewind(2, "files")
        assert not result.applied
        assert [o.applied for o in result.outcomes] == [True, False]  # 3 back, 2 stopped
        assert not result.refused
        said = result.describe()
        assert said.startswith("rewound to prompt 2: ")
        assert "stopped at checkpoint 2: a file changed meanwhile" in said
