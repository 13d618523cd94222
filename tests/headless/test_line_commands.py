"""The line-mode chat's session commands (`rawtrio --plain` on a pipe, the fake model server):
`/help` (generated from the table the chat dispatches on, and the user guide's table),
`/quit`, `/model`, `/mode`, `/new`, `/fork`, `/resume`, `/sessions`, `/agent` — the
full-screen chat's commands, with its checks and messages. A bad argument is named and
changes nothing; Ctrl-C or a line that picks nothing while a command asks changes nothing;
a session open in another process is refused and the chat stays where it was."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trio

from rawtrio.cli.repl_commands import LINE_COMMANDS
from rawtrio.store.paths import DB_NAME
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import FakeModelServer
from tests.headless.conftest import FakeModel
from tests.headless.support import (
    Isolation,
    LineChat,
    run_rawtrio,
    stored_sessions,
    user_texts,
)

KEYS = {"ANTHROPIC_API_KEY": "test-key"}
USER_GUIDE = Path(__file__).parents[2] / "docs" / "user-guide.md"


def write_user_config(iso: Isolation, base_url: str) -> None:
    """Two configured models (both the fake server) and a second agent."""
    config = iso.home / ".config" / "rawtrio" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        'default_model = "first"\n'
        "[models.first]\n"
        'provider = "anthropic"\n'
        'model_id = "fake-first"\n'
        f'base_url = "{base_url}"\n'
        "[models.second]\n"
        'provider = "anthropic"\n'
        'model_id = "fake-second"\n'
        f'base_url = "{base_url}"\n'
        "[agents.reviewer]\n"
        'model = "second"\n'
        'system_prompt = "You review."\n'
    )


def test_help_lists_the_commands_it_runs_and_quit_leaves(
    iso: Isolation, fake_model: FakeModel
) -> None:
    chat = LineChat(iso, "--base-url", fake_model.base_url)
    try:
        chat.send("/help")
        chat.wait_for("commands:")
        for command in LINE_COMMANDS.values():
            line = chat.wait_for(command.usage)
            assert command.summary in line
        chat.wait_for("Ctrl-C twice or Ctrl-D at the prompt leaves")
        chat.send("/quit now")  # a bad argument is named; the chat goes on
        chat.wait_for("rawtrio: /quit takes no argument, got 'now'")
        chat.send("/quit")  # leaves with stdin still open
        out = chat.finish()
    finally:
        chat.close()
    assert "Hello" not in out
    assert stored_sessions(iso) == []  # no command reached the model: the empty chat was deleted


def test_the_user_guides_table_lists_the_help_commands() -> None:
    """The user guide's line-mode command table names exactly the commands of `/help`."""
    text = USER_GUIDE.read_text()
    section = text[text.index("## The line-mode chat") :]
    section = section[: section.index("\n## ", 1)]
    table = section[section.index("| command | effect |") :]
    documented: set[str] = set()
    for row in table.splitlines()[2:]:
        if not row.startswith("|"):
            break
        first = row.split(" | ")[0]
        documented |= {u.replace("\\|", "|") for u in re.findall(r"`([^`]+)`", first)}
    assert documented == {c.usage for c in LINE_COMMANDS.values()}


def test_model_and_mode_show_switch_and_name_what_was_wrong(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    write_user_config(iso, recorder.base_url)
    chat = LineChat(iso)
    try:
        chat.send("/model")
        chat.wait_for("model: first; configured: first, second")
        chat.send("/model third")
        chat.wait_for("rawtrio: unknown model 'third'; configured models: first, second")
        chat.turn("say hello")
        assert recorder.requests[-1].body["model"] == "fake-first"
        chat.send("/model second")
        chat.wait_for("model: second from the next request on")
        chat.turn("say hello")
        assert recorder.requests[-1].body["model"] == "fake-second"
        chat.send("/mode")
        chat.wait_for("permission mode: bypass (choices: default, accept-edits, plan, bypass")
        chat.send("/mode everything")
        chat.wait_for("rawtrio: unknown mode 'everything'; choices: default, accept-edits, plan")
        chat.send("/mode plan")
        chat.wait_for("(permission mode: plan)")
        chat.send("/mode")
        chat.wait_for("permission mode: plan (choices:")
        out = chat.leave()
    finally:
        chat.close()
    [only] = stored_sessions(iso)
    assert user_texts(iso, only["id"]) == ["say hello", "say hello"]
    assert f"session {only['id']} — resume it with" in out


def test_new_resume_fork_and_sessions_switch_the_chat(
    iso: Isolation, fake_model: FakeModel
) -> None:
    chat = LineChat(iso, "--base-url", fake_model.base_url)
    try:
        chat.turn("say hello")
        [first] = stored_sessions(iso)
        chat.send("/new")
        assert f"session {first['id']} — resume it with" in chat.wait_for("resume it with")
        second = chat.wait_for("new session ").split("new session ")[1].strip()
        chat.send("/new")  # the empty session is deleted on the way
        third = chat.wait_for("new session ").split("new session ")[1].strip()
        assert {s["id"] for s in stored_sessions(iso)} == {first["id"], third}
        assert second != third

        chat.send(f"/resume {first['id'][:8]}")  # a unique prefix
        chat.wait_for("Hello from the fake model.")  # the recap of its last turns
        chat.wait_for(f"resumed session {first['id']}")
        assert [s["id"] for s in stored_sessions(iso)] == [first["id"]]  # the third was empty
        chat.send(f"/resume {first['id']}")
        chat.wait_for(f"rawtrio: the chat is in session {first['id']} already")
        chat.send("/resume")
        chat.wait_for("rawtrio: /resume needs a session id (or use /sessions to pick one)")
        chat.send("/resume 0000ffff")
        chat.wait_for("rawtrio: no session with id '0000ffff'")
        chat.send("/new now")
        chat.wait_for("rawtrio: /new takes no argument, got 'now'")

        chat.send("/fork")
        forked = chat.wait_for(f"forked {first['id']} as session ").split("as session ")[1]
        fork = forked.strip()
        assert {s["id"] for s in stored_sessions(iso)} == {first["id"], fork}
        chat.turn("say hello")  # in the fork

        chat.send("/sessions everything")
        chat.wait_for("rawtrio: /sessions takes 'all' or nothing, got 'everything'")
        chat.send("/sessions")  # an empty line picks nothing
        chat.wait_for("/sessions: resume which one?")
        assert first["id"][:8] in chat.wait_for("  1. ")
        chat.wait_for("type its number")
        chat.send("")
        chat.wait_for("/sessions: nothing was done")
        chat.send("/sessions all")  # Ctrl-C while it asks
        chat.wait_for("type its number")
        chat.ctrl_c()
        chat.wait_for("/sessions: nothing was done")
        chat.send("/sessions")
        chat.wait_for("type its number")
        chat.send("2")  # not a listed number
        chat.wait_for("/sessions: nothing was done")
        chat.turn("say hello")  # still in the fork
        chat.send("/sessions")
        chat.wait_for("type its number")
        chat.send("1")
        chat.wait_for(f"resumed session {first['id']}")
        chat.turn("say hello")
        out = chat.leave()
    finally:
        chat.close()
    assert f"session {first['id']} — resume it with" in out.splitlines()[-1]
    assert user_texts(iso, first["id"]) == ["say hello", "say hello"]
    assert user_texts(iso, fork) == ["say hello", "say hello", "say hello"]


def test_a_session_open_in_another_process_is_refused_and_the_chat_stays(
    iso: Isolation, fake_model: FakeModel
) -> None:
    made = run_rawtrio(iso, "-p", "say hello", "--base-url", fake_model.base_url, env=KEYS)
    assert made.returncode == 0, made.stderr
    [other] = stored_sessions(iso)
    holder = LineChat(iso, "--base-url", fake_model.base_url, "--resume", other["id"])
    chat = LineChat(iso, "--base-url", fake_model.base_url)
    try:
        holder.wait_for(f"session {other['id']}; /help")
        chat.turn("say hello")
        [mine] = [s for s in stored_sessions(iso) if s["id"] != other["id"]]
        chat.send(f"/resume {other['id']}")
        refused = chat.wait_for("is open in another process")
        assert f"rawtrio: session {other['id']} is open in another process (pid " in refused
        chat.send("/sessions")
        chat.wait_for("type its number")
        chat.send("1")
        chat.wait_for("is open in another process")
        chat.turn("say hello")  # still in its own session
        chat.leave()
        holder.leave()
    finally:
        chat.close()
        holder.close()
    assert user_texts(iso, mine["id"]) == ["say hello", "say hello"]
    assert user_texts(iso, other["id"]) == ["say hello"]


def test_agent_and_new_start_where_rawtrio_was_launched(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    write_user_config(iso, recorder.base_url)
    elsewhere = iso.root / "elsewhere"
    elsewhere.mkdir()
    made = run_rawtrio(iso, "--cwd", str(elsewhere), "-p", "say hello", env=KEYS)
    assert made.returncode == 0, made.stderr
    [other] = stored_sessions(iso)
    # An agent only the launch directory's project defines: `/agent` looks it up there.
    (iso.cwd / ".rawtrio").mkdir()
    (iso.cwd / ".rawtrio" / "config.toml").write_text(
        '[agents.localonly]\nsystem_prompt = "Only here."\n', encoding="utf-8"
    )
    chat = LineChat(iso, "--resume", other["id"])  # launched in iso.cwd, resuming elsewhere's
    try:
        chat.send("/agent")
        chat.wait_for("agent: default (/agent NAME starts a session with another)")
        chat.send("/agent critic")
        refused = chat.wait_for("expected an agent name")
        assert "(default, localonly, reviewer)" in refused
        assert "critic" in refused
        chat.turn("say hello")  # still in the resumed session
        chat.send("/agent reviewer")
        chat.wait_for("new session ")
        chat.wait_for("agent reviewer: new session (an agent's prompt is fixed per session)")
        chat.send("/agent")
        chat.wait_for("agent: reviewer (/agent NAME")
        chat.turn("say hello")
        assert recorder.requests[-1].body["model"] == "fake-second"  # the agent's model
        assert "You review." in json.dumps(recorder.requests[-1].body["system"])
        chat.send("/new")
        chat.wait_for("new session ")
        chat.turn("say hello")
        assert recorder.requests[-1].body["model"] == "fake-second"  # still the agent's
        chat.send("/agent localonly")
        chat.wait_for("agent localonly: new session")
        chat.turn("say hello")
        assert "Only here." in json.dumps(recorder.requests[-1].body["system"])
        chat.leave()
    finally:
        chat.close()
    assert user_texts(iso, other["id"]) == ["say hello", "say hello"]
    made_here = [s for s in stored_sessions(iso) if s["id"] != other["id"]]
    assert len(made_here) == 3
    assert {Path(s["cwd"]) for s in made_here} == {iso.cwd.resolve()}


def test_resume_names_an_ambiguous_id_prefix_and_the_chat_stays(
    iso: Isolation, fake_model: FakeModel
) -> None:
    made = run_rawtrio(iso, "-p", "say hello", "--base-url", fake_model.base_url, env=KEYS)
    assert made.returncode == 0, made.stderr
    [db] = (iso.home / ".local" / "state").rglob(DB_NAME)
    twins = ["abcd" + "1" * 28, "abcd" + "2" * 28]  # two stored ids sharing a prefix

    async def store_twins() -> None:
        async with SqliteStore(db) as store:
            for sid in twins:
                await store.create_session(
                    session_id=sid,
                    cwd=str(iso.cwd),
                    system_prompt="",
                    provider="anthropic",
                    model="fake",
                    title="twin",
                )

    trio.run(store_twins)
    chat = LineChat(iso, "--base-url", fake_model.base_url)
    try:
        chat.wait_for("/help lists the commands")
        chat.send("/resume abcd")
        chat.wait_for("rawtrio: 'abcd' is the start of 2 session ids; give more of it")
        chat.send("/resume abcd2")
        chat.wait_for(f"resumed session {twins[1]}")
        chat.turn("say hello")
        chat.leave()
    finally:
        chat.close()
    assert user_texts(iso, twins[1]) == ["say hello"]
