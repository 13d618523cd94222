"""The chat's `/resume` of a session made in another directory opens it under that
directory's project configuration, as `rawtrio --resume` does: the chat's own boot (a
real application, store and runtime; no terminal), then `/resume ID`."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from rawtrio.app import Choice, open_app
from rawtrio.cli.main import build_parser
from rawtrio.permissions.rules import Effect, evaluate
from rawtrio.runtime.session import Session
from rawtrio.store.errors import StoreError
from rawtrio.tui.app import ChatApp
from rawtrio.tui.commands import run_command
from rawtrio.tui.host import ChatSetup
from rawtrio.tui.runner import Boot, _attached_boot, _chat_boot
from rawtrio.tui.start import find_host
from tests.host.conftest import base_url, host, model, place
from tests.host.support import HostProcess, Place
from tests.host.test_resume_config import deny_writes_to
from tests.test_settings import home  # noqa: F401  (the `home` fixture)

__all__ = ["base_url", "host", "model", "place"]  # the host tests' fixtures, used here

USER = """
default_model = "local"

[models.local]
provider = "openai-chat"
model_id = "local-model"
base_url = "http://127.0.0.1:9/v1"
api_key = { env = "LOCAL_KEY" }
"""


@contextlib.asynccontextmanager
async def booted_chat(
    argv: list[str],
    ask_trust: Callable[[list[Any]], Awaitable[str]] | None = None,
    boot: Callable[[argparse.Namespace], Boot] = _chat_boot,
) -> AsyncIterator[ChatApp]:
    """The chat's own boot of `rawtrio ARGV` (a real application, no terminal), held once it
    attached to its session; the trust prompt, if any, answered by `ask_trust`. `boot`
    makes the boot from the arguments (the local chat's by default)."""
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
            if ask_trust is not None:
                app.ask_trust = ask_trust  # type: ignore[method-assign,assignment]
            nursery.start_soon(boot(build_parser().parse_args(argv)), app)
            await attached.wait()
            try:
                yield app
            finally:
                app.closed.set()


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
    async with booted_chat(argv) as app:
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


async def test_resume_at_start_shows_the_notices_of_the_sessions_own_project(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`rawtrio --resume ID` from another directory: the notices of the session's project's
    configuration (here, a Claude Code settings file left untrusted) are shown."""
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

    async def skip(files: list[Any]) -> str:  # the user answers "without them"
        return "skip"

    async with booted_chat([*argv, "--resume", sid], skip) as app:
        await trio.testing.wait_all_tasks_blocked()
        canvas = app.transcript.listbox.render((200, 60))
        shown = "\n".join(line.decode().rstrip() for line in canvas.text)
    assert app.session is not None
    assert app.session.id == sid
    assert "rawtrio: .claude/settings.json defines allow rules" in shown, shown


async def test_resume_at_start_asks_trust_for_the_sessions_own_project(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The trust prompt of `rawtrio --resume ID` run elsewhere lists the session's project's
    files that wait for trust, not the run directory's; trusted, they apply."""
    config = home / "user.toml"
    config.write_text(USER)
    project, here = home / "project", home / "here"
    (project / ".claude").mkdir(parents=True)
    (here / ".claude").mkdir(parents=True)
    monkeypatch.chdir(here)
    argv = ["--config", str(config)]
    async with open_app(build_parser().parse_args([*argv, "--cwd", str(project)])) as made:
        sid = (await made.start_session(Choice())).id
    for folder in (project, here):
        (folder / ".claude" / "settings.json").write_text(
            json.dumps({"permissions": {"allow": ["Bash(make:*)"]}})
        )
    asked: list[Path] = []

    async def trust(files: list[Any]) -> str:  # the user answers "trust"
        asked.extend(f.path for f in files)
        return "trust"

    async with booted_chat([*argv, "--resume", sid], trust) as app:
        session = app.session
    assert asked == [project / ".claude" / "settings.json"]
    assert isinstance(session, Session)
    assert session.id == sid
    given = {"command": "make all"}
    decided = evaluate(session.options.permission_rules, "bash", given, read_only=False)
    assert decided.effect is Effect.ALLOW  # the trusted file's allow rule applies


async def test_the_attached_chat_asks_trust_for_the_resumed_sessions_own_project(
    place: Place,
    host: HostProcess,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attached to a running host, `rawtrio --resume ID` run elsewhere asks about the
    session's project's files as the local chat does (the host resolves the session's
    configuration there), not the run directory's; "trust" records the project's file in
    the trust store the host reads."""
    project, here = place.iso.root / "project", place.iso.cwd
    for name, value in place.env().items():
        monkeypatch.setenv(name, value)
    (project / ".claude").mkdir(parents=True)
    (here / ".claude").mkdir(parents=True)
    made = place.rawtrio(
        "-p", "hello", "--no-attach", "--cwd", str(project), "--output-format", "json"
    )
    assert made.returncode == 0, made.stderr
    sid = json.loads(made.stdout)["session_id"]
    for folder in (project, here):
        (folder / ".claude" / "settings.json").write_text(
            json.dumps({"permissions": {"allow": ["Bash(make:*)"]}})
        )
    monkeypatch.chdir(here)
    asked: list[Path] = []

    async def trust(files: list[Any]) -> str:  # the user answers "trust"
        asked.extend(f.path for f in files)
        return "trust"

    def attached(args: argparse.Namespace) -> Boot:
        found = find_host(args)  # the host `rawtrio.tui.start` finds before the first frame
        assert found is not None, "the chat did not find the running host"
        return _attached_boot(args, *found)

    async with booted_chat(["--resume", sid], trust, attached) as app:
        session = app.session
        assert session is not None
        assert not isinstance(session, Session)  # the host's session, not a local one
        assert session.id == sid
        assert session.cwd == project
    assert asked == [project / ".claude" / "settings.json"]
    folders = json.loads((place.state / "trust.json").read_text())["folders"]
    assert str((project / ".claude" / "settings.json").resolve()) in folders
    assert str((here / ".claude" / "settings.json").resolve()) not in folders


def test_the_line_chats_trust_question_for_resume_names_the_sessions_project(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`rawtrio --plain --resume ID` run elsewhere asks about the session's project's files
    (its question on a terminal; here stdin answers "n")."""
    from rawtrio.cli.repl import _ask_trust

    config = home / "user.toml"
    config.write_text(USER)
    project, here = home / "project", home / "here"
    (project / ".claude").mkdir(parents=True)
    here.mkdir()
    monkeypatch.chdir(here)
    argv = ["--config", str(config)]

    async def make() -> str:
        async with open_app(build_parser().parse_args([*argv, "--cwd", str(project)])) as made:
            return (await made.start_session(Choice())).id

    sid = trio.run(make)
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(make:*)"]}})
    )

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    assert _ask_trust(build_parser().parse_args([*argv, "--plain", "--resume", sid]))
    asked = capsys.readouterr().out
    assert "files that run code or grant permissions" in asked
    assert ".claude/settings.json" in asked


async def test_new_after_resume_at_start_starts_where_rawtrio_was_launched(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`rawtrio --resume ID` from another directory, then `/new` (and `/agent NAME`): the
    new session works in the directory rawtrio was launched in, under that directory's
    configuration; the resumed session's directory applied to that session only."""
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
    async with booted_chat([*argv, "--resume", sid]) as app:
        resumed = app.session
        assert resumed is not None
        assert resumed.id == sid
        assert resumed.cwd == project
        await run_command(app, "/new")
        made_new = app.session
        await run_command(app, "/agent default")
        with_agent = app.session
    for session in (made_new, with_agent):
        assert isinstance(session, Session)
        assert session.id != sid
        assert session.cwd == here
        rules = session.options.permission_rules

        def effect(name: str, rules: Any = rules) -> Effect:
            given = {"path": str(here / name), "content": ""}
            return evaluate(rules, "write_file", given, read_only=False).effect

        assert effect("theirs.txt") is Effect.DENY  # the launch directory's rule
        assert effect("mine.txt") is not Effect.DENY  # the resumed session's: not
    assert made_new is not with_agent


async def test_resuming_a_session_open_elsewhere_is_refused_and_the_chat_stays(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`/resume` (and a `/sessions` pick) of a session another process holds is refused,
    and the chat goes on in its own session with its transcript. It used to close its
    session and clear the screen first, so the refusal left a chat with no session."""
    config = home / "user.toml"
    config.write_text(USER)
    monkeypatch.chdir(home)
    argv = ["--config", str(config)]
    async with open_app(build_parser().parse_args(argv)) as holder:
        other = await holder.start_session(Choice())  # open here: its lease is held
        async with booted_chat(argv) as app:
            assert app.session is not None
            mine = app.session.id
            app.transcript.note("  shown before the /resume")
            shown = len(app.transcript.walker)
            await run_command(app, f"/resume {other.id}")
            assert app.session is not None
            assert app.session.id == mine
            assert len(app.transcript.walker) == shown + 1  # kept, and the refusal added
            [refusal] = app.transcript.walker[-1].items
            assert f"session {other.id} is open in another process" in refusal[1]
            await run_command(app, f"/resume {mine}")  # the chat's own: nothing to switch
            assert app.session.id == mine
            assert "already" in app.transcript.walker[-1].items[0][1]


async def test_agent_after_resume_is_looked_up_where_rawtrio_was_launched(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`/agent NAME` starts its session where rawtrio was launched, so NAME is looked up in
    that project's configuration, not the resumed session's (it was refused there as an
    unknown agent). A switch that is refused leaves the chat's agent as it was."""
    config = home / "user.toml"
    config.write_text(USER)
    project, here = home / "project", home / "here"
    project.mkdir()
    (here / ".rawtrio").mkdir(parents=True)
    (here / ".rawtrio" / "config.toml").write_text(
        '[agents.localonly]\nsystem_prompt = "Only here."\n', encoding="utf-8"
    )
    monkeypatch.chdir(here)
    argv = ["--config", str(config)]
    async with open_app(build_parser().parse_args([*argv, "--cwd", str(project)])) as made:
        sid = (await made.start_session(Choice())).id
    async with booted_chat([*argv, "--resume", sid]) as app:
        assert app.session is not None
        assert app.session.cwd == project
        await run_command(app, "/agent localonly")
        assert app.agent == "localonly", app.transcript.walker[-1].items
        assert app.session.id != sid
        assert app.session.cwd == here
        # A refused switch (the store fails to create the session) changes nothing.
        current = app.session
        runtime = app.runtime
        assert runtime is not None

        async def refuse(*_: Any, **__: Any) -> Any:
            raise StoreError("the disk is full")

        monkeypatch.setattr(runtime, "create_session", refuse)
        await run_command(app, "/agent default")
        assert (app.session, app.agent) == (current, "localonly")
        assert "the disk is full" in app.transcript.walker[-1].items[0][1]


async def test_leaving_the_chat_during_new_leaves_no_stray_session(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`/new` opens its session before leaving the current one; the chat quitting (Ctrl-D)
    while the old one closes used to leave the new, empty session in the store, listed
    and found by `--continue`. It is closed and deleted."""
    config = home / "user.toml"
    config.write_text(USER)
    monkeypatch.chdir(home)
    async with booted_chat(["--config", str(config)]) as app:
        runtime = app.runtime
        assert runtime is not None
        assert app.session is not None
        before = {r.id for r in await runtime.list_sessions()}
        leave = app.leave_session
        with trio.CancelScope() as quitting:

            async def quit_while_leaving() -> None:
                quitting.cancel(reason="the user quit while the old session closed")
                await leave()
                await trio.lowlevel.checkpoint()

            monkeypatch.setattr(app, "leave_session", quit_while_leaving)
            await run_command(app, "/new")
        assert quitting.cancelled_caught
        assert {r.id for r in await runtime.list_sessions()} <= before  # no new one left
