"""Sessions on the SQLite store: resume in a new runtime, notes that survive restarts."""

from __future__ import annotations

from pathlib import Path

import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import ProviderKind, UserMessage, check_pairing
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.skills import discover_skills
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.tools.settings import ToolSettings
from tests.conftest import provider_for

SCENARIO = {
    "rules": [
        {"match": "second", "replies": [{"text": "second answer"}]},
        {
            "match": "first",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one; sleep 60"}}]},
                {"text": "first answer"},
            ],
        },
    ]
}


async def test_cancelled_session_resumes_in_a_new_runtime_with_its_note(
    wire: ProviderKind, tmp_path: Path
) -> None:
    db = tmp_path / "sessions.db"
    async with open_fake_model_server(Scenario.from_dict(SCENARIO)) as server:
        options = SessionOptions(
            cwd=tmp_path,
            provider=provider_for(server, wire),
            tools=ToolSettings(sigterm_grace_s=0.2),
        )
        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            session = await runtime.create_session(options)
            with session.subscribe() as sub:
                turn_id = await session.submit("first")
                async for event in sub:
                    if isinstance(event, ev.ToolOutputDelta):
                        session.cancel("test cancel")
                        break
                ended = await session.wait_turn(turn_id)
            assert ended.outcome is TurnOutcome.CANCELLED
            session_id = session.id
            before = list(session.context)

        # A new process would do exactly this: a new store and runtime on the same file.
        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            resumed = await runtime.open_session(session_id, options)
            assert resumed.context == before
            with trio.fail_after(60):
                again = await resumed.run_turn("second")
            assert again.outcome is TurnOutcome.COMPLETED, again.reason
            sent = resumed.context[-2]
            assert isinstance(sent, UserMessage)
            assert "the previous turn was cancelled (test cancel)" in sent.text
            assert check_pairing(resumed.context) == []
            history = await store.history(session_id, newest_first=False, limit=1000)
            types = [e.type for e in history.events]
            assert types.count("turn_ended") == 2


async def test_a_changed_skill_is_announced_in_the_next_message_after_resume(
    tmp_path: Path,
) -> None:
    skill_dir = tmp_path / "skills" / "release"
    skill_dir.mkdir(parents=True)
    skill_file = skill_dir / "SKILL.md"
    skill_file.write_text("---\nname: release\ndescription: Cut a release\n---\nTag it.\n")
    db = tmp_path / "sessions.db"
    scenario = {"rules": [{"match": "*", "replies": [{"text": "ok"}]}]}
    async with open_fake_model_server(Scenario.from_dict(scenario)) as server:

        def options() -> SessionOptions:
            skills = discover_skills([tmp_path / "skills"]).skills
            return SessionOptions(
                cwd=tmp_path, provider=provider_for(server, "anthropic"), skills=skills
            )

        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            session = await runtime.create_session(options())
            await session.run_turn("first")
            session_id = session.id
        skill_file.write_text("---\nname: release\ndescription: Cut a release\n---\nTag, push.\n")
        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            resumed = await runtime.open_session(session_id, options())
            await resumed.run_turn("second")
            sent = resumed.context[-2]
            assert isinstance(sent, UserMessage)
            assert "release" in sent.text
            assert sent.text.endswith("second")
            assert sent.text != "second"


async def test_changed_tool_definitions_are_announced_once_after_resume(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    scenario = {"rules": [{"match": "*", "replies": [{"text": "ok"}]}]}
    async with open_fake_model_server(Scenario.from_dict(scenario)) as server:

        def options(*tools: str) -> SessionOptions:
            return SessionOptions(
                cwd=tmp_path, provider=provider_for(server, "anthropic"), tool_selection=tools
            )

        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            session = await runtime.create_session(options("read_file", "bash"))
            await session.run_turn("first")
            session_id, first_digest = session.id, session.tools_digest
            assert "changed" not in (server.requests[-1].user_text or "")

        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            resumed = await runtime.open_session(session_id, options("read_file", "grep"))
            assert resumed.tools_digest != first_digest
            await resumed.run_turn("second")
            sent = resumed.context[-2]
            assert isinstance(sent, UserMessage)
            assert "added: grep; removed: bash" in sent.text
            assert sent.text.endswith("second")
            names = [t["name"] for t in server.requests[-1].body["tools"]]
            assert names == ["read_file", "grep"]
            history = await store.events_since(session_id, 0)
            assert any("removed: bash" in e.text for e in history if isinstance(e, ev.Notice))

        # The same tools again: nothing to say, and the cache key stays.
        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            again = await runtime.open_session(session_id, options("read_file", "grep"))
            assert again.tools_digest == resumed.tools_digest
            await again.run_turn("third")
            sent = again.context[-2]
            assert isinstance(sent, UserMessage)
            assert sent.text == "third"
