"""`/rewind` in the line-mode chat (`rawtrio --plain`): a real process on a pipe, the fake
model server, real tools. The same operation as the terminal chat's `/rewind` and
`rawtrio rewind` (docs/checkpoints.md): a numbered list answered by the next line, `/rewind
N` directly, the conflict question of `/undo`, the conversation forked and the chat going
on in the fork; Ctrl-C or an answer that picks nothing changes nothing; refusals name what
was wrong."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.checkpoints.helpers import Picture, picture
from tests.checkpoints.rewind_support import PROMPTS, make_small_project, scenario_three_turns
from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import Isolation, LineChat, stored_sessions, user_texts

ANSWERS = ("wrote a.txt", "changed a.txt and run.sh", "removed keep.txt")


@pytest.fixture(scope="module")
def three_turns_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(scenario_three_turns(), tmp_path_factory.mktemp("lr-model")) as fake:
        yield fake


class Chat(LineChat):
    """The line chat on the three-turn model."""

    def __init__(self, iso: Isolation, model: FakeModel) -> None:
        super().__init__(iso, "--base-url", model.base_url)

    def three_turns(self) -> list[Picture]:
        pictures = []
        for text, answer in zip(PROMPTS, ANSWERS, strict=True):
            pictures.append(picture(self.iso.cwd))
            self.send(text)
            self.wait_for(answer)
            self.wait_for("(completed")
        pictures.append(picture(self.iso.cwd))
        return pictures


def test_rewind_from_the_list_restores_the_files_and_goes_on_in_the_fork(
    tmp_path: Path, three_turns_model: FakeModel
) -> None:
    iso = Isolation(tmp_path)
    make_small_project(iso.cwd)
    chat = Chat(iso, three_turns_model)
    try:
        pictures = chat.three_turns()
        [source] = stored_sessions(iso)
        chat.send("/rewind")
        chat.wait_for("/rewind: back to just before which prompt?")
        # Every prompt, numbered as the session numbers them, with what its turn changed.
        assert "  1. 'first change'  (1 file changed (+1 \u22120))" in chat.wait_for("1. ")
        assert "  2. 'second change'  (3 files changed" in chat.wait_for("2. ")
        assert "  3. 'third change'  (2 files changed" in chat.wait_for("3. ")
        chat.wait_for("type its number")
        chat.send("2")
        chat.wait_for("/rewind to prompt 2: what goes back?")
        assert "1. files and conversation" in chat.wait_for("1. ")
        assert "2. conversation only (the files stay as they are)" in chat.wait_for("2. ")
        assert "3. files only (the conversation goes on)" in chat.wait_for("3. ")
        chat.send("1")
        done = chat.wait_for("rewound to prompt 2: conversation forked as")
        assert "'first change (rewound to prompt 2)'" in done
        assert "4 files restored" in done
        assert picture(iso.cwd) == pictures[1]  # bytes and modes as before prompt 2
        goes_on = chat.wait_for("the chat goes on in session")
        assert f"{source['id']} is left as it was" in goes_on
        assert "prompt 2 was: second change" in chat.wait_for("prompt 2 was")
        [fork] = [s for s in stored_sessions(iso) if s["id"] != source["id"]]
        assert fork["id"] in goes_on
        assert fork["title"] == "first change (rewound to prompt 2)"
        assert user_texts(iso, fork["id"]) == ["first change"]
        assert user_texts(iso, source["id"]) == list(PROMPTS)  # left as it was
        # The chat is in the fork now: the next message goes there.
        chat.send("second change")
        chat.wait_for("changed a.txt and run.sh")
        chat.wait_for("(completed")
        out = chat.leave()
    finally:
        chat.close()
    assert f"session {fork['id']} — resume it with" in out
    assert user_texts(iso, fork["id"]) == ["first change", "second change"]
    assert user_texts(iso, source["id"]) == list(PROMPTS)


def test_rewind_n_asks_about_outside_changes_and_ctrl_c_changes_nothing(
    tmp_path: Path, three_turns_model: FakeModel
) -> None:
    iso = Isolation(tmp_path)
    make_small_project(iso.cwd)
    chat = Chat(iso, three_turns_model)
    try:
        pictures = chat.three_turns()
        (iso.cwd / "a.txt").write_bytes(b"mine\n")
        outside = picture(iso.cwd)

        chat.send("/rewind 1 files")  # directly: no list, no question about what
        chat.wait_for("/rewind: 1 file(s) changed outside rawtrio since:")
        assert "a.txt: expected" in chat.wait_for("a.txt")
        chat.wait_for("overwrite them? y = yes")
        assert picture(iso.cwd) == outside  # asked first, nothing written
        chat.send("n")
        chat.wait_for("/rewind: nothing was done")
        assert picture(iso.cwd) == outside

        chat.send("/rewind")  # Ctrl-C at the list
        chat.wait_for("type its number")
        chat.ctrl_c()
        chat.wait_for("/rewind: nothing was done")
        chat.send("/rewind 1")  # Ctrl-C at "what goes back?"
        chat.wait_for("/rewind to prompt 1: what goes back?")
        chat.wait_for("type its number")
        chat.ctrl_c()
        chat.wait_for("/rewind: nothing was done")
        chat.send("/rewind 1 both")  # Ctrl-C at the conflict question
        chat.wait_for("overwrite them? y = yes")
        chat.ctrl_c()
        chat.wait_for("/rewind: nothing was done")
        assert picture(iso.cwd) == outside
        assert len(stored_sessions(iso)) == 1  # no fork either

        chat.send("/rewind 1 files")
        chat.wait_for("overwrite them? y = yes")
        chat.send("y")
        done = chat.wait_for("rewound to prompt 1:")
        assert "4 files restored" in done
        chat.wait_for("overwrote 1 file(s) changed outside rawtrio")
        assert picture(iso.cwd) == pictures[0]
        chat.send("say more")  # files only: the chat goes on in the same session
        chat.wait_for("(completed")
        out = chat.leave()
    finally:
        chat.close()
    [only] = stored_sessions(iso)
    assert f"session {only['id']} — resume it with" in out
    assert "the chat goes on in session" not in out
    assert user_texts(iso, only["id"]) == [*PROMPTS, "say more"]


def test_rewind_refusals_name_what_was_wrong_and_change_nothing(
    tmp_path: Path, three_turns_model: FakeModel
) -> None:
    iso = Isolation(tmp_path)
    make_small_project(iso.cwd)
    before = picture(iso.cwd)
    chat = Chat(iso, three_turns_model)
    try:
        chat.send("/rewind")
        chat.wait_for("/rewind: no prompt to rewind to yet")
        chat.send("just talk")  # a turn that changes no file: no checkpoint
        chat.wait_for("(completed")
        chat.send("/rewind 1 files")
        chat.wait_for("/rewind: no files to restore: no turn from prompt 1 on changed any")
        chat.send("/rewind 5")
        chat.wait_for("/rewind: no prompt 5: the session has prompts 1 to 1")
        chat.send("/rewind 0")
        chat.wait_for("/rewind: N is a prompt number (1, 2, \u2026), got '0'")
        chat.send("/rewind two")
        chat.wait_for("/rewind: N is a prompt number (1, 2, \u2026), got 'two'")
        chat.send("/rewind 1 everything")
        chat.wait_for(
            "/rewind: what goes back is one of both, conversation, files; got 'everything'"
        )
        chat.send("/rewind 1 files now")
        chat.wait_for("/rewind: too many words in '1 files now'")
        chat.send("/rewind")
        chat.wait_for("type its number")
        chat.send("7")  # a number that is not a prompt: said
        chat.wait_for("/rewind: no prompt 7: the session has prompts 1 to 1")
        chat.send("/rewind")
        chat.wait_for("type its number")
        chat.send("")  # an empty line picks nothing
        chat.wait_for("/rewind: nothing was done")
        chat.send("/rewind 1")
        chat.wait_for("what goes back?")
        # No turn changed files: the conversation is the only choice.
        assert "1. conversation only" in chat.wait_for("1. ")
        chat.wait_for("type its number")
        chat.send("2")
        chat.wait_for("/rewind: nothing was done")
        chat.leave()
    finally:
        chat.close()
    assert picture(iso.cwd) == before
    [only] = stored_sessions(iso)  # no fork was made
    assert user_texts(iso, only["id"]) == ["just talk"]  # no command reached the model
