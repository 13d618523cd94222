"""Stored sessions across real processes: `--continue`, `--resume`, `--fork`, the writer
lease between two rawtrio processes, and the `rawtrio sessions` commands.

Every run of a test shares the test's isolated state directory (XDG_STATE_HOME), so a
later process finds what an earlier one stored. What the model was sent is read from the
fake model server's recorded requests (`recorder`).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from rawtrio.testing.fake_model import FakeModelServer
from tests.headless.support import Finished, Isolation, LiveRun, run_rawtrio

KEYS = {"ANTHROPIC_API_KEY": "test-key"}
HELLO = "Hello from the fake model."


def ask(iso: Isolation, server: FakeModelServer, prompt: str, *flags: str) -> Finished:
    """`rawtrio -p PROMPT --output-format json` against `server`."""
    return run_rawtrio(
        iso,
        "-p",
        prompt,
        "--base-url",
        server.base_url,
        "--model",
        "test-model",
        "--output-format",
        "json",
        *flags,
        env=KEYS,
    )


def result_of(done: Finished) -> dict[str, Any]:
    assert done.returncode == 0, done
    [result] = done.json_lines()
    return result


def sessions(iso: Isolation, *args: str) -> Finished:
    return run_rawtrio(iso, "sessions", *args)


def listed(iso: Isolation, *args: str) -> list[dict[str, Any]]:
    done = sessions(iso, "list", "--json", *args)
    assert done.returncode == 0, done
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def last_request_messages(server: FakeModelServer) -> str:
    """The messages of the latest model request, as JSON text to search in."""
    return json.dumps(server.requests[-1].body["messages"])


def last_user_message(server: FakeModelServer) -> str:
    return json.dumps(server.requests[-1].body["messages"][-1])


# --- --continue, --resume, --fork -----------------------------------------------------------


def test_a_run_is_stored_and_listed_with_its_title_from_the_prompt(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    first = result_of(ask(iso, recorder, "say hello to the session list"))
    [row] = listed(iso)
    assert row["id"] == first["session_id"]
    assert row["title"] == "say hello to the session list"
    assert row["cwd"] == str(iso.cwd.resolve())
    assert row["message_count"] == 2
    assert row["model"] == "test-model"
    assert (iso.home / ".local" / "state" / "rawtrio" / "sessions.db").is_file()


def test_continue_sends_the_earlier_conversation_in_the_same_session(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    first = result_of(ask(iso, recorder, "say hello, first prompt"))
    second = result_of(ask(iso, recorder, "say hello, second prompt", "--continue"))
    assert second["session_id"] == first["session_id"]
    assert second["result"] == HELLO
    sent = recorder.requests[-1]
    assert sent.user_text is not None
    assert "second prompt" in sent.user_text
    assert sent.step == 0
    assert len(sent.body["messages"]) == 3
    assert "say hello, first prompt" in last_request_messages(recorder)
    assert HELLO in last_request_messages(recorder)
    [row] = listed(iso)
    assert row["message_count"] == 4


def test_continue_takes_the_latest_session_of_the_directory(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    result_of(ask(iso, recorder, "say hello, older"))
    newer = result_of(ask(iso, recorder, "say hello, newer"))
    other = iso.root / "elsewhere"
    other.mkdir()
    result_of(ask(iso, recorder, "say hello, elsewhere", "--cwd", str(other)))
    again = result_of(ask(iso, recorder, "say hello, again", "--continue"))
    assert again["session_id"] == newer["session_id"]
    assert "say hello, newer" in last_request_messages(recorder)
    assert "older" not in last_request_messages(recorder)


def test_continue_with_no_session_in_the_directory_is_a_usage_error(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    done = ask(iso, recorder, "say hello", "--continue")
    assert done.returncode == 2, done
    assert f"--continue: no stored session in {iso.cwd.resolve()}" in done.stderr
    assert recorder.requests == []


def test_resume_with_fork_makes_a_new_session_and_leaves_the_source(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    source = result_of(ask(iso, recorder, "say hello, before the fork"))["session_id"]
    fork = result_of(ask(iso, recorder, "say hello, in the fork", "--resume", source, "--fork"))
    assert fork["session_id"] != source
    assert "say hello, before the fork" in last_request_messages(recorder)
    rows = {r["id"]: r for r in listed(iso)}
    assert rows[source]["message_count"] == 2
    assert rows[source]["title"] == "say hello, before the fork"
    assert rows[fork["session_id"]]["message_count"] == 4
    assert rows[fork["session_id"]]["title"] == "say hello, before the fork (fork)"
    exported = json.loads(sessions(iso, "export", source, "--format", "json").stdout)
    assert [m["role"] for m in exported["context"]] == ["user", "assistant"]


def test_resume_accepts_a_unique_prefix_of_the_id(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    first = result_of(ask(iso, recorder, "say hello, by prefix"))["session_id"]
    again = result_of(ask(iso, recorder, "say hello, again", "--resume", first[:8]))
    assert again["session_id"] == first


@pytest.mark.parametrize("front_end", [["-p", "say hello"], []], ids=["headless", "chat"])
def test_resuming_an_unknown_id_exits_2_saying_how_to_find_one(
    iso: Isolation, recorder: FakeModelServer, front_end: list[str]
) -> None:
    done = run_rawtrio(
        iso, *front_end, "--resume", "no-such-session", "--base-url", recorder.base_url, env=KEYS
    )
    assert done.returncode == 2, done
    assert "no session with id 'no-such-session' (list them: rawtrio sessions list)" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr
    assert recorder.requests == []


def test_a_cancelled_run_then_continue_tells_the_model_what_was_cut(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    run = LiveRun.start(
        iso,
        "-p",
        "stall while streaming",
        "--base-url",
        recorder.base_url,
        "--output-format",
        "events",
        env=KEYS,
    )
    try:
        session_id = run.wait_for_event("text_delta")["session_id"]
        run.signal(signal.SIGINT, group=False)
        cancelled = run.finish()
    finally:
        if run.proc.poll() is None:
            run.kill()
    assert cancelled.returncode == 130, cancelled
    resumed = result_of(ask(iso, recorder, "say hello after the cancel", "--continue"))
    assert resumed["session_id"] == session_id
    note = last_user_message(recorder)
    assert "the previous turn was cancelled (received SIGINT)" in note
    assert "say hello after the cancel" in note


def test_a_session_open_in_another_process_exits_5_until_that_process_dies(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    holder = LiveRun.start(
        iso,
        "-p",
        "stall while streaming",
        "--base-url",
        recorder.base_url,
        "--output-format",
        "events",
        env=KEYS,
    )
    try:
        session_id = holder.wait_for_event("text_delta")["session_id"]
        locked = ask(iso, recorder, "say hello", "--resume", session_id)
        renamed = sessions(iso, "rename", session_id, "a new title")
        readable = sessions(iso, "show", session_id)
        holder.proc.send_signal(signal.SIGKILL)
        holder.proc.wait()
    finally:
        if holder.proc.poll() is None:
            holder.kill()
    message = f"session {session_id} is open in another process (pid {holder.proc.pid})"
    assert locked.returncode == 5, locked
    assert message in locked.stderr
    assert locked.stdout == ""
    assert renamed.returncode == 5, renamed
    assert message in renamed.stderr
    assert readable.returncode == 0, readable  # reading needs no lease
    assert "> stall while streaming" in readable.stdout

    after = result_of(ask(iso, recorder, "say hello after the crash", "--resume", session_id))
    assert after["session_id"] == session_id
    assert "the previous turn was interrupted: rawtrio stopped before it ended" in (
        last_user_message(recorder)
    )
    shown = sessions(iso, "show", session_id)
    assert "[turn interrupted: rawtrio stopped before the turn finished" in shown.stdout


# --- the chat ---------------------------------------------------------------------------------


def chat(iso: Isolation, server: FakeModelServer, stdin: str, *flags: str) -> Finished:
    return run_rawtrio(iso, "--base-url", server.base_url, *flags, env=KEYS, stdin=stdin)


def test_the_chat_continues_a_headless_session_showing_its_last_turns(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    first = result_of(ask(iso, recorder, "say hello from headless"))["session_id"]
    done = chat(iso, recorder, "say hello in the chat\n", "--continue")
    assert done.returncode == 0, done
    assert "> say hello from headless" in done.stdout  # the recap
    assert f"session {first}" in done.stdout
    assert f"rawtrio --resume {first}" in done.stdout
    assert "say hello from headless" in last_request_messages(recorder)
    [row] = listed(iso)
    assert row["message_count"] == 4


def test_a_chat_is_stored_and_a_chat_without_messages_is_not(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    assert chat(iso, recorder, "").returncode == 0
    assert listed(iso) == []
    done = chat(iso, recorder, "say hello to the chat\n")
    assert done.returncode == 0, done
    [row] = listed(iso)
    assert row["title"] == "say hello to the chat"
    assert f"rawtrio --resume {row['id']}" in done.stdout


# --- rawtrio sessions … -----------------------------------------------------------------------


def test_show_renders_prompts_replies_tool_calls_and_outcomes(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    session_id = result_of(ask(iso, recorder, "use a tool"))["session_id"]
    result_of(ask(iso, recorder, "say hello, second turn", "--continue"))
    done = sessions(iso, "show", session_id[:6])
    assert done.returncode == 0, done
    out = done.stdout
    assert out.startswith(f"use a tool  ({session_id})\n")
    for expected in (
        "> use a tool",
        '→ bash {"command": "echo tool-output"}',
        "← bash ok",
        "tool-output",
        "The tool said tool-output.",
        "[turn completed: end_turn]",
        "> say hello, second turn",
        HELLO,
    ):
        assert expected in out
    assert out.index("> use a tool") < out.index("> say hello, second turn")
    last = sessions(iso, "show", session_id, "--limit", "1").stdout
    assert "> say hello, second turn" in last
    assert "> use a tool" not in last


def test_export_as_markdown_and_as_json_to_a_file(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    session_id = result_of(ask(iso, recorder, "use a tool"))["session_id"]
    markdown = sessions(iso, "export", session_id)
    assert markdown.returncode == 0, markdown
    assert markdown.stdout.startswith("# use a tool\n")
    assert "## You" in markdown.stdout
    assert "**Result** of `bash`" in markdown.stdout
    target = iso.root / "export.json"
    done = sessions(iso, "export", session_id, "--format", "json", "-o", str(target))
    assert done.returncode == 0, done
    assert done.stdout == ""
    data = json.loads(target.read_text())
    assert data["format"] == "rawtrio-session"
    assert data["session"]["id"] == session_id
    assert [m["role"] for m in data["context"]] == ["user", "assistant", "tool", "assistant"]


def test_search_finds_sessions_by_their_words_with_a_snippet(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    zebras = result_of(ask(iso, recorder, "say hello about zebras"))["session_id"]
    result_of(ask(iso, recorder, "say hello about lions"))
    done = sessions(iso, "search", "zebras")
    assert done.returncode == 0, done
    assert done.stdout.startswith(f"{zebras}  say hello about zebras")
    assert "[zebras]" in done.stdout
    assert "lions" not in done.stdout
    hits = json.loads(sessions(iso, "search", "hello", "--json").stdout)
    assert {h["session_id"] for h in hits} >= {zebras}
    assert len({h["session_id"] for h in hits}) == 2
    nothing = sessions(iso, "search", "giraffes")
    assert nothing.returncode == 0
    assert nothing.stdout == ""
    assert "no matches for 'giraffes'" in nothing.stderr


def test_list_filters_by_directory_and_prints_a_table(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    other = iso.root / "elsewhere"
    other.mkdir()
    here = result_of(ask(iso, recorder, "say hello here"))["session_id"]
    there = result_of(ask(iso, recorder, "say hello there", "--cwd", str(other)))["session_id"]
    assert [r["id"] for r in listed(iso)] == [there, here]  # newest first
    assert [r["id"] for r in listed(iso, "--cwd", str(other))] == [there]
    table = sessions(iso, "list").stdout.splitlines()
    assert table[0].split() == ["ID", "UPDATED", "MSGS", "TITLE", "DIRECTORY"]
    assert table[1].startswith(there)
    assert table[1].endswith(str(other.resolve()))
    assert " 2  say hello there " in table[1]


def test_rename_and_rm(iso: Isolation, recorder: FakeModelServer) -> None:
    keep = result_of(ask(iso, recorder, "say hello, keep me"))["session_id"]
    drop = result_of(ask(iso, recorder, "say hello, drop me"))["session_id"]
    renamed = sessions(iso, "rename", keep, "the kept one")
    assert renamed.returncode == 0, renamed
    removed = sessions(iso, "rm", drop)
    assert removed.returncode == 0, removed
    assert removed.stdout == f"deleted {drop}\n"
    [row] = listed(iso)
    assert (row["id"], row["title"]) == (keep, "the kept one")
    gone = sessions(iso, "show", drop)
    assert gone.returncode == 2
    assert f"no session with id '{drop}'" in gone.stderr


def test_rm_with_an_unknown_id_deletes_nothing(iso: Isolation, recorder: FakeModelServer) -> None:
    keep = result_of(ask(iso, recorder, "say hello, keep me"))["session_id"]
    done = sessions(iso, "rm", keep, "no-such-session")
    assert done.returncode == 2
    assert "no session with id 'no-such-session'" in done.stderr
    assert [r["id"] for r in listed(iso)] == [keep]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "no-such-session"], "no session with id 'no-such-session'"),
        (["export", "no-such-session"], "no session with id 'no-such-session'"),
        (["rename", "no-such-session", "x"], "no session with id 'no-such-session'"),
        (["rename", "whatever", "  "], "sessions rename: the title is empty"),
        (["show", "x", "--limit", "0"], "--limit: expected a positive integer, got 0"),
        (["export", "x", "--format", "xml"], "invalid choice: 'xml'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_sessions_usage_errors_exit_2(iso: Isolation, args: list[str], message: str) -> None:
    done = sessions(iso, *args)
    assert done.returncode == 2, done
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_list_of_an_empty_store_says_so(iso: Isolation) -> None:
    done = sessions(iso, "list")
    assert done.returncode == 0, done
    assert done.stdout == ""
    assert "no stored sessions" in done.stderr
    assert listed(iso) == []


def test_the_state_dir_can_be_moved_with_rawtrio_state_dir(
    iso: Isolation, recorder: FakeModelServer, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "state-elsewhere"
    done = run_rawtrio(
        iso,
        "-p",
        "say hello",
        "--base-url",
        recorder.base_url,
        env={**KEYS, "RAWTRIO_STATE_DIR": str(elsewhere)},
    )
    assert done.returncode == 0, done
    assert (elsewhere / "sessions.db").is_file()
    assert listed(iso) == []  # not in the XDG state dir
    moved = run_rawtrio(
        iso, "sessions", "list", "--json", env={"RAWTRIO_STATE_DIR": str(elsewhere)}
    )
    assert len(json.loads(moved.stdout)) == 1


def test_sessions_help_lists_every_command(iso: Isolation) -> None:
    done = run_rawtrio(iso, "sessions", "--help")
    assert done.returncode == 0
    for command in ("list", "show", "search", "export", "rm", "rename"):
        assert command in done.stdout
