"""`/rewind` in the chat (a real terminal, tmux; the fake model server): pick prompt 2 of
three, then "files and conversation": the files are as before prompt 2, the chat is in a
fork whose conversation ends before it, the prompt's text is back in the editor, and the
session rewound is left as it was. A file changed outside rawtrio is asked about first."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoints.helpers import Picture, picture
from tests.checkpoints.rewind_support import PROMPTS, make_small_project, scenario_three_turns
from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import Isolation, run_rawtrio
from tests.tui.support import Pane


@pytest.fixture(scope="module")
def three_turns_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(scenario_three_turns(), tmp_path_factory.mktemp("rw-model")) as fake:
        yield fake


def sessions(iso: Isolation) -> list[dict[str, Any]]:
    listed = run_rawtrio(iso, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)
    return found


def user_texts(iso: Isolation, sid: str) -> list[str]:
    shown = run_rawtrio(iso, "sessions", "export", "--format", "json", sid)
    assert shown.returncode == 0, shown.stderr
    return [m["text"] for m in json.loads(shown.stdout)["context"] if m["role"] == "user"]


def start_with_three_turns(iso: Isolation, model: FakeModel) -> tuple[Pane, list[Picture]]:
    args = ["--base-url", model.base_url, "--sigterm-grace", "0.2"]
    pane = Pane.start(iso, *args, env={"ANTHROPIC_API_KEY": "test-key"})
    pictures = []
    pane.wait_for("ready │")
    for text, answer in zip(
        PROMPTS, ("wrote a.txt", "changed a.txt and run.sh", "removed keep.txt"), strict=True
    ):
        pictures.append(picture(iso.cwd))
        pane.type(text)
        pane.keys("Enter")
        pane.wait_for(answer)
        pane.wait_for("ready │")
    pictures.append(picture(iso.cwd))
    return pane, pictures


def test_rewind_to_prompt_two_restores_files_and_forks_with_the_prompt_in_the_editor(
    tmp_path: Path, three_turns_model: FakeModel
) -> None:
    iso = Isolation(tmp_path)
    make_small_project(iso.cwd)
    pane, pictures = start_with_three_turns(iso, three_turns_model)
    try:
        [source] = sessions(iso)
        pane.type("/rewind")
        pane.keys("Enter")
        listed = pane.wait_for("back to just before which prompt?")
        # Every prompt is listed, with what its turn changed.
        assert "1. 'first change'  (1 file changed (+1 \u22120))" in listed
        assert "3. 'third change'" in listed
        pane.keys("Down")
        pane.keys("Enter")  # prompt 2
        asked = pane.wait_for("what goes back?")
        assert "1. files and conversation" in asked
        assert "2. conversation only" in asked
        assert "3. files only" in asked
        pane.keys("Enter")  # files and conversation
        screen = pane.wait_for("rewound to prompt 2: conversation forked as")
        assert "4 files restored" in screen
        pane.wait_for(lambda s: "› second change" in s, "the prompt back in the editor")
        assert picture(iso.cwd) == pictures[1]  # bytes and modes as before prompt 2
        forks = [s for s in sessions(iso) if s["id"] != source["id"]]
        [fork] = forks
        assert fork["title"] == "first change (rewound to prompt 2)"
        assert user_texts(iso, fork["id"]) == ["first change"]
        assert user_texts(iso, source["id"]) == list(PROMPTS)  # left as it was
        # The chat is in the fork: Enter sends the prompt again there.
        pane.keys("Enter")
        pane.wait_for("changed a.txt and run.sh")
        pane.wait_for("ready │")
        assert user_texts(iso, fork["id"]) == ["first change", "second change"]
        pane.type("/quit")
        pane.keys("Enter")
        assert pane.wait_ended() == 0
    finally:
        pane.close()


def test_rewind_asks_about_an_outside_change_and_conversation_only_keeps_the_files(
    tmp_path: Path, three_turns_model: FakeModel
) -> None:
    iso = Isolation(tmp_path)
    make_small_project(iso.cwd)
    pane, _pictures = start_with_three_turns(iso, three_turns_model)
    try:
        (iso.cwd / "a.txt").write_bytes(b"mine\n")
        outside = picture(iso.cwd)
        pane.type("/rewind")
        pane.keys("Enter")
        pane.wait_for("back to just before which prompt?")
        pane.keys("Enter")  # prompt 1
        pane.wait_for("what goes back?")
        pane.keys("Down", "Down")
        pane.keys("Enter")  # files only
        pane.wait_for("overwrite them")
        assert "a.txt: expected" in pane.screen()
        assert picture(iso.cwd) == outside  # asked first, nothing written
        pane.keys("Down")
        pane.keys("Enter")  # keep them
        pane.wait_for("/rewind: nothing was done")
        assert picture(iso.cwd) == outside
        assert len(sessions(iso)) == 1

        pane.type("/rewind 9")
        pane.keys("Enter")
        pane.wait_for("/rewind: no prompt 9: the session has prompts 1 to 3")
        pane.type("/rewind 3")  # prompt 3 by its number: no list
        pane.keys("Enter")
        pane.wait_for("/rewind to prompt 3: what goes back?")
        pane.keys("Down")
        pane.keys("Enter")  # conversation only
        pane.wait_for("rewound to prompt 3: conversation forked as")
        pane.wait_for(lambda s: "› third change" in s, "the prompt back in the editor")
        assert picture(iso.cwd) == outside  # the files stay
        assert len(sessions(iso)) == 2
    finally:
        pane.close()
