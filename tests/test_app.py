"""The composition root: `open_app` turns overrides + configuration + environment into an
open application, the same way for every front end (docs/contracts.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawtrio.app import Choice, open_app
from rawtrio.contracts import TurnOutcome
from rawtrio.errors import ConfigError, NoCredentials
from rawtrio.permissions.rules import Effect, evaluate
from rawtrio.runtime import SessionOptions
from rawtrio.store.paths import default_db_path
from tests.test_settings import CONFIG, args, home  # noqa: F401  (the `home` fixture)


async def test_bad_configuration_opens_no_store(home: Path) -> None:  # noqa: F811
    config = home / "rawtrio.toml"
    config.write_text("default_agent = 3\n")
    with pytest.raises(ConfigError):
        async with open_app(args(config=str(config), cwd=str(home))):
            pytest.fail("the application opened on a bad configuration")
    assert not default_db_path().exists()


async def test_a_missing_key_opens_no_store(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LOCAL_KEY")
    config = home / "rawtrio.toml"
    config.write_text(CONFIG)
    with pytest.raises(NoCredentials):
        async with open_app(args(config=str(config), cwd=str(home))):
            pytest.fail("the application opened without the model's key")
    assert not default_db_path().exists()


async def test_a_session_made_in_one_app_is_resumed_by_prefix_in_the_next(
    home: Path,  # noqa: F811
) -> None:
    config = home / "rawtrio.toml"
    config.write_text(CONFIG)
    overrides = args(config=str(config), cwd=str(home))
    async with open_app(overrides) as app:
        assert app.agent == "coder"
        session = await app.start_session(Choice())
        created = session.id
        await session.close("test done")
    assert default_db_path().exists()
    async with open_app(overrides) as app:
        assert await app.resolve_id(created[:6]) == created
        resumed = await app.start_session(Choice(resume=created[:6]))
        assert resumed.id == created
        await resumed.close("test done")
    async with open_app(configure=False, retention=False) as app:  # the store's commands
        assert [r.id for r in await app.runtime.list_sessions()] == [created]
        with pytest.raises(RuntimeError, match="without configuration"):
            _ = app.options


async def test_options_for_another_directory_keep_the_overrides(
    home: Path,  # noqa: F811
) -> None:
    config = home / "rawtrio.toml"
    config.write_text(CONFIG)
    other = home / "other"
    other.mkdir()
    async with open_app(args(config=str(config), cwd=str(home), max_steps=3)) as app:
        found = await app.options_for(cwd=other)
        assert found.options.cwd == other.resolve()
        assert found.options.max_steps == 3
        assert found.options.cwd.parent == app.options.cwd  # the run's own are unchanged


async def test_the_demo_runs_a_turn_against_the_built_in_fake_model(
    home: Path,  # noqa: F811
) -> None:
    async with open_app(demo=True) as app:
        scratch = app.options.cwd
        assert (scratch / "README.md").exists()
        session = await app.runtime.create_session(app.options)
        turn_id = await session.submit("Show me what you can do")
        ended = await session.wait_turn(turn_id)
        assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
        assert "Welcome to the rawtrio demo" in ended.final_text
        await session.close("test done")
    assert not scratch.exists()  # the scratch project goes with the block
    assert not default_db_path().exists()  # and the user's own store was never opened


async def test_flag_path_patterns_are_anchored_at_each_sessions_directory(
    home: Path,  # noqa: F811
) -> None:
    """`--allowedTools 'Edit(src/**)'` means the session's src/: for the options of another
    directory (an editor's session) and for options moved to a resumed session's directory
    (`SessionOptions.in_directory`, as the chat's `/resume` and `task` children move them)."""
    config = home / "rawtrio.toml"
    config.write_text(CONFIG)
    other = (home / "other").resolve()
    other.mkdir()
    rules = [{"pattern": "Edit(src/**)", "effect": "allow"}]

    def effect(options: SessionOptions, path: Path) -> Effect:
        given = {"path": str(path), "content": ""}
        return evaluate(options.permission_rules, "write_file", given, read_only=False).effect

    async with open_app(args(config=str(config), cwd=str(home), tool_rules=rules)) as app:
        here = app.options.cwd
        assert effect(app.options, here / "src" / "a") is Effect.ALLOW
        assert effect(app.options, other / "src" / "a") is not Effect.ALLOW
        for options in (
            (await app.options_for(cwd=other)).options,
            app.options.in_directory(other),
        ):
            assert effect(options, other / "src" / "a") is Effect.ALLOW
            assert effect(options, here / "src" / "a") is not Effect.ALLOW
