"""`rawtrio rewind` as a user runs it: a real process on a session stored in SQLite by a
real session (the fake model server, real tools)."""

from __future__ import annotations

import json
from pathlib import Path

from rawtrio.checkpoints.store import CheckpointStore
from rawtrio.messages import UserMessage
from rawtrio.store.sqlite import SqliteStore
from tests.checkpoints.helpers import Picture, picture
from tests.checkpoints.rewind_support import PROMPTS, make_small_project, stored_session
from tests.checkpoints.test_cli_undo import rawtrio


async def three_turns(tmp_path: Path) -> tuple[Path, Path, str, list[Picture]]:
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state"
    pictures = []
    async with stored_session(project, state) as (_store, session):
        for text in PROMPTS:
            pictures.append(picture(project))
            await session.run_turn(text)
    pictures.append(picture(project))
    return project, state, session.id, pictures


async def context_of(state: Path, session_id: str) -> list[str]:
    async with SqliteStore(state / "sessions.db") as store:
        return [m.text for m in await store.load_context(session_id) if isinstance(m, UserMessage)]


async def test_rewind_files_and_conversation_from_the_command_line(tmp_path: Path) -> None:
    project, state, sid, pictures = await three_turns(tmp_path)
    assert (state / "sessions.db").exists()
    listed = rawtrio(project, state, "rewind", "--list")
    assert listed.returncode == 0, listed.stderr
    assert f"session {sid}" in listed.stdout
    assert "    2  'second change'  [#2 3 files changed" in listed.stdout

    done = rawtrio(project, state, "rewind", "--session", sid[:8], "--to", "2")
    assert done.returncode == 0, done.stderr
    fork = done.stdout.strip()
    assert len(fork) == 32
    assert fork != sid
    assert "rewound to prompt 2: conversation forked as" in done.stderr
    assert "4 files restored" in done.stderr
    assert picture(project) == pictures[1]
    assert await context_of(state, fork) == ["first change"]
    assert await context_of(state, sid) == list(PROMPTS)  # the source is left as it was

    shown = rawtrio(project, state, "sessions", "list", "--json")
    assert shown.returncode == 0, shown.stderr
    ids = {r["id"] for r in json.loads(shown.stdout)}
    assert {sid, fork} <= ids


async def test_conversation_only_and_a_conflict_from_the_command_line(tmp_path: Path) -> None:
    project, state, sid, pictures = await three_turns(tmp_path)
    talk = rawtrio(project, state, "rewind", "--to", "3", "--conversation")
    assert talk.returncode == 0, talk.stderr
    assert await context_of(state, talk.stdout.strip()) == ["first change", "second change"]
    assert picture(project) == pictures[3]

    (project / "a.txt").write_bytes(b"changed outside\n")
    outside = picture(project)
    refused = rawtrio(project, state, "rewind", "--session", sid, "--to", "1", "--files")
    assert refused.returncode == 6
    assert refused.stdout == ""
    assert "a.txt: expected" in refused.stderr
    assert picture(project) == outside
    states = [c.state for c in CheckpointStore(state / "checkpoints", project).change_sets(sid)]
    assert states == ["applied", "applied", "applied"]

    forced = rawtrio(project, state, "rewind", "--session", sid, "--to", "1", "--files", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout == ""  # no fork
    assert picture(project) == pictures[0]


def test_bad_arguments_are_named_and_change_nothing(tmp_path: Path) -> None:
    project = make_small_project(tmp_path / "p")
    state = tmp_path / "state"
    before = picture(project)
    no_to = rawtrio(project, state, "rewind")
    assert no_to.returncode == 2
    assert "--to N is needed" in no_to.stderr
    zero = rawtrio(project, state, "rewind", "--to", "0")
    assert zero.returncode == 2
    assert "--to takes a prompt number" in zero.stderr
    both = rawtrio(project, state, "rewind", "--to", "1", "--files", "--conversation")
    assert both.returncode == 2
    assert "not allowed with argument" in both.stderr
    nothing_here = rawtrio(project, state, "rewind", "--to", "1")
    assert nothing_here.returncode == 2
    assert "no stored session in" in nothing_here.stderr
    unknown = rawtrio(project, state, "rewind", "--session", "nosuchsession", "--to", "1")
    assert unknown.returncode == 2
    assert "nosuchsession" in unknown.stderr
    assert picture(project) == before
