"""`/undo` and `/redo` in the chat (a real terminal, tmux): the turn's summary line, the
conflict choice, and the files put back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.checkpoints.helpers import make_project, picture, scenario_all_tools
from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import Isolation
from tests.tui.support import Pane


@pytest.fixture(scope="module")
def changes_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(scenario_all_tools(), tmp_path_factory.mktemp("ckpt-model")) as fake:
        yield fake


def test_undo_asks_about_an_outside_change_then_puts_the_files_back(
    tmp_path: Path, changes_model: FakeModel
) -> None:
    iso = Isolation(tmp_path)
    make_project(iso.cwd)
    original = picture(iso.cwd)
    args = ["--base-url", changes_model.base_url, "--sigterm-grace", "0.2"]
    pane = Pane.start(iso, *args, env={"ANTHROPIC_API_KEY": "test-key"})
    try:
        pane.wait_for("ready │")
        pane.type("change things")
        pane.keys("Enter")
        pane.wait_for("8 files changed (+6 \u22124)")
        pane.wait_for("ready │")
        changed = picture(iso.cwd)
        (iso.cwd / "sed.txt").write_bytes(b"my own edit\n")
        pane.type("/undo")
        pane.keys("Enter")
        pane.wait_for("overwrite them")
        assert (iso.cwd / "sed.txt").read_bytes() == b"my own edit\n"  # asked first
        pane.keys("Down")
        pane.keys("Enter")
        pane.wait_for("nothing was written")
        assert (iso.cwd / "fresh").is_dir()
        pane.type("/undo")
        pane.keys("Enter")
        pane.wait_for("overwrite them")
        pane.keys("Enter")
        pane.wait_for("8 file(s) put back")
        assert picture(iso.cwd) == original
        pane.type("/redo")
        pane.keys("Enter")
        pane.wait_for("redo checkpoint 1")
        assert picture(iso.cwd) == changed
        pane.type("/quit")
        pane.keys("Enter")
        assert pane.wait_ended() == 0
    finally:
        pane.close()


def test_rewind_picks_a_prompt_and_puts_the_files_back_to_before_it(
    tmp_path: Path, changes_model: FakeModel
) -> None:
    iso = Isolation(tmp_path)
    make_project(iso.cwd)
    original = picture(iso.cwd)
    args = ["--base-url", changes_model.base_url, "--sigterm-grace", "0.2"]
    pane = Pane.start(iso, *args, env={"ANTHROPIC_API_KEY": "test-key"})
    try:
        pane.wait_for("ready │")
        pane.type("change things")
        pane.keys("Enter")
        pane.wait_for("8 files changed")
        pane.wait_for("ready │")
        pane.type("/rewind")
        pane.keys("Enter")
        pane.wait_for("back to just before which prompt?")
        pane.keys("Enter")  # the first listed: prompt 1, "change things"
        pane.wait_for("what goes back?")
        pane.keys("Down", "Down")
        pane.keys("Enter")  # files only
        pane.wait_for("rewound to prompt 1: 8 files restored")
        assert picture(iso.cwd) == original
        pane.type("/quit")
        pane.keys("Enter")
        assert pane.wait_ended() == 0
    finally:
        pane.close()
