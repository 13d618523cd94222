"""The chat's `/resume` of a session made in another directory opens it under that
directory's project configuration, as `rawtrio --resume` does: the chat's own boot (a
real application, store and runtime; no terminal), then `/resume ID`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from rawtrio.app import Choice, open_app
from rawtrio.cli.main import build_parser
from rawtrio.permissions.rules import Effect, evaluate
from rawtrio.runtime.session import Session
from rawtrio.tui.app import ChatApp
from rawtrio.tui.commands import run_command
from rawtrio.tui.host import ChatSetup
from rawtrio.tui.runner import _chat_boot
from tests.host.test_resume_config import deny_writes_to
from tests.test_settings import home  # noqa: F401  (the `home` fixture)

USER = """
default_model = "local"

[models.local]
provider = "openai-chat"
model_id = "local-model"
base_url = "http://127.0.0.1:9/v1"
api_key = { env = "LOCAL_KEY" }
"""


async def test_resume_in_the_chat_takes_the_sessions_own_project_configuration(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = home / "user.toml"
    config.write_text(USER)
    project, here = home / "project", home / "here"
    project.mkdir()
    here.mkdir()
    deny_writes_to(project, "mine.txt")
    deny_writes_to(here, "theirs.txt")
    monkeypatch.chdir(here)
    argv = ["--config", str(config)]
    async with open_app(build_parser().parse_args([*argv, "--cwd", str(project)])) as made:
        sid = (await made.start_session(Choice())).id
        await made.runtime.get_session(sid)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            setup = ChatSetup(runtime=None, options=None, agent="-", history_path=None)
            app = ChatApp(setup, nursery)
            attached = trio.Event()
            attach = app.attach

            async def attach_and_tell(*args: Any, **kwargs: Any) -> None:
                await attach(*args, **kwargs)
                attached.set()

            app.attach = attach_and_tell  # type: ignore[method-assign]
            nursery.start_soon(_chat_boot(build_parser().parse_args(argv)), app)
            await attached.wait()
            assert app.session is not None
            started = app.session.id
            await run_command(app, f"/resume {sid}")
            session = app.session
            assert isinstance(session, Session)  # a local chat's: the runtime's own
            assert session.id == sid != started
            rules = session.options.permission_rules

            def effect(name: str) -> Effect:
                given = {"path": str(project / name), "content": ""}
                return evaluate(rules, "write_file", given, read_only=False).effect

            assert effect("mine.txt") is Effect.DENY  # the session's project's rule
            assert effect("theirs.txt") is not Effect.DENY  # the chat's directory's: not
            app.closed.set()


async def test_resume_at_start_shows_the_notices_of_the_sessions_own_project(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`rawtrio --resume ID` from another directory: the notices of the session's project's
    configuration (here, a Claude Code settings file that waits for trust) are shown."""
    config = home / "user.toml"
    config.write_text(USER)
    project, here = home / "project", home / "here"
    (project / ".claude").mkdir(parents=True)
    here.mkdir()
    monkeypatch.chdir(here)
    argv = ["--config", str(config)]
    async with open_app(build_parser().parse_args([*argv, "--cwd", str(project)])) as made:
        sid = (await made.start_session(Choice())).id
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(make:*)"]}})
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            setup = ChatSetup(runtime=None, options=None, agent="-", history_path=None)
            app = ChatApp(setup, nursery)
            attached = trio.Event()
            attach = app.attach

            async def attach_and_tell(*args: Any, **kwargs: Any) -> None:
                await attach(*args, **kwargs)
                attached.set()

            app.attach = attach_and_tell  # type: ignore[method-assign]
            nursery.start_soon(_chat_boot(build_parser().parse_args([*argv, "--resume", sid])), app)
            await attached.wait()
            await trio.testing.wait_all_tasks_blocked()
            canvas = app.transcript.listbox.render((200, 60))
            shown = "\n".join(line.decode().rstrip() for line in canvas.text)
            app.closed.set()
    assert app.session is not None
    assert app.session.id == sid
    assert "rawtrio: .claude/settings.json defines allow rules" in shown, shown
